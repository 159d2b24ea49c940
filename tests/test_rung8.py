"""Rung 8 through the climb: the kernel in its slot of kladder's trained model, or in the
user's model through an Adapter; the score against the baseline, both shown."""
import os

import pytest
from conftest import zoo_param

import kladder as kl
from kladder.gen.gaps import end_to_end as model_gap
from kladder.model import minilm
from kladder.report.words import message
from kladder.core.sizes import CPU_BUDGET

HERE = os.path.dirname(__file__)


def test_a_spec_without_a_slot_has_no_model_points():
    spec = kl.Spec("s", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)})
    assert list(model_gap.points(spec, CPU_BUDGET)) == []


def test_a_bad_slot_is_a_spec_error():
    with pytest.raises(kl.SpecError, match="slot"):
        kl.Spec("s", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)}, model=kl.InModel(slot=3))


@pytest.mark.parametrize("case,check", [zoo_param("decode_group16", "score"), zoo_param("compounding_bias", "nll")])
def test_rung_8_catches_what_the_kernel_rungs_let_through(case, check, zoo_case):
    # decode_group16: exact match collapses (group 16, beyond the spec's G <= 8);
    # compounding_bias: exact match holds, the right answers' likelihood falls (a lean inside the tolerance)
    # (the zoo's batch climbs each case at its own rung, 8, through the CLI: tests/conftest.py)
    z = zoo_case(case)
    assert z.bug["exit_code"] == 1, z.text[-2000:]
    assert [r["rung"] for r in z.bug["rungs"] if r["climbed"]] == [8]
    (pt,) = z.points("bug", 8)
    f = pt["findings"][0]
    assert pt["status"] == "failed" and f["check"] == "model" and f["output"] == check
    assert "baseline" in f["message"] and f["facts"]["baseline"] > f["facts"].get("kernel", 0) or check == "nll"
    if check == "score":
        assert f["facts"]["baseline"] == 1.0 and f["facts"]["kernel"] < 0.5 and "<- wrong" in f["message"]
    else:
        assert f["facts"]["kernel"] > 1.03 * f["facts"]["baseline"] and "exact match stayed 1.0000" in f["message"]


@pytest.mark.parametrize("case", [zoo_param("decode_group16"), zoo_param("compounding_bias")])
def test_rung_8_twins_keep_the_baseline(case, zoo_case):
    z = zoo_case(case)
    assert z.twin["exit_code"] == 0, z.text[-2000:]
    assert [r["rung"] for r in z.twin["rungs"] if r["climbed"]] == [8]
    (pt,) = z.points("twin", 8)
    assert pt["status"] == "passed" and "exact match 1.0000 with the kernel vs 1.0000 baseline" in pt["reason"]


@pytest.mark.skipif(minilm.available() is not None, reason=str(minilm.available()))
def test_the_adapter_scores_the_users_model_with_and_without_the_kernel(tmp_path):
    ref = os.path.join(HERE, "specs", "minilm_layernorm.py")
    good = kl.climb(ref + "::good", rungs=8, device="cpu", log_path=str(tmp_path / "a"))
    bad = kl.climb(ref + "::bad", rungs=8, device="cpu", log_path=str(tmp_path / "b"))
    assert good.exit_code == 0 and [o.status for o in good.outcomes] == ["passed"]
    (o,) = bad.outcomes
    assert o.status == "failed" and "fell from 1.0000 to 0.7" in message(o.findings[0])
    assert "LayerNorm.forward" in message(o.findings[0])
