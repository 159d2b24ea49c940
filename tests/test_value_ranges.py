"""Every value kind keeps inside a declared range (issue 34 item 3): peaked, ties, identical,
distinct, tiny, huge and the rest, for every float dtype, over ranges that exclude zero and
negatives; a kind no value of the range can show is skipped for that input with a note."""
import json
import os
import subprocess
import sys

import pytest
import torch

from kladder.gen.fill import fill_kind, range_problem, representable_range
from kladder.core.notation import ValueKind
from kladder.core.spec import VALUE_KINDS

FLOATS = ("float64", "float32", "float16", "bfloat16")
RANGES = ((0.5, 9), (1e-3, 1), (0, 1), (-3, -2), (2.0, 2.0), (1, 1.0078125))
KINDS = [k for k in VALUE_KINDS if k not in ("nonfinite", "masked", "lengths")] + ["peaked/30"]
HERE = os.path.dirname(__file__)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rng", RANGES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_keeps_inside_the_range(kind, rng, dtype):
    why = range_problem(kind, dtype, rng)
    t = torch.empty(37, 129, dtype=getattr(torch, dtype))
    if why is not None:
        assert why in ("no_tiny", "no_one", "no_value")
        assert ValueKind.parse(kind).kind in ("tiny", "ones") or why == "no_value"
        return
    fill_kind(t, kind, dtype, torch.Generator().manual_seed(3), rng)
    v = t.double()
    assert torch.isfinite(v).all()
    assert (v >= rng[0]).all() and (v <= rng[1]).all(), (v.min().item(), v.max().item())


def test_the_kinds_keep_their_character_inside_a_range():
    g = lambda: torch.Generator().manual_seed(0)
    t = torch.empty(8, 512)
    fill_kind(t, "peaked/10", "float32", g(), (0, 9))
    assert (t < 1).float().mean() > 0.6 and t.max() > 5      # most near lo, a few near hi
    fill_kind(t, "ties", "float32", g(), (0, 9))
    assert all(len(set(r.tolist())) <= 4 for r in t)          # a few ulps apart in every row
    assert (t.max(1).values - t.min(1).values).max() < 1e-5
    fill_kind(t, "distinct", "float32", g(), (0, 9))
    assert len(set(t[0].tolist())) == 512 and (t == t[0]).all()
    fill_kind(t, "huge", "float32", g(), (0, 9))
    assert (t == 9).float().mean() > 0.03                     # the range's end, not half of it
    fill_kind(t, "tiny", "float32", g(), (0, 9))
    assert ((t > 0) & (t < torch.finfo(torch.float32).tiny * 1.01)).any() and (t >= 0).all()


def test_representable_range_rounds_inwards():
    lo, hi = representable_range("bfloat16", (0.1, 0.3))
    assert lo >= 0.1 and hi <= 0.3
    assert torch.tensor(lo).to(torch.bfloat16).item() == lo and torch.tensor(hi).to(torch.bfloat16).item() == hi
    assert representable_range("bfloat16", (1.001, 1.002)) is None           # between two bfloat16 values
    assert range_problem("normal", "bfloat16", (1.001, 1.002)) == "no_value"


def test_without_a_range_the_kinds_are_unchanged():
    """The seeded values of a point without a range are what they were (reproducible repros)."""
    t = torch.empty(4, 64)
    fill_kind(t, "distinct", "float32", torch.Generator().manual_seed(0))
    assert t[0, 0].item() == 1.0 and t[0, 1].item() < 0 and t[0, -1].item() == pytest.approx(4.0 if 63 % 2 == 0 else -4.0)
    fill_kind(t, "huge", "float32", torch.Generator().manual_seed(0))
    assert (t < 0).any()


def _climb(tmp_path, ref):
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(HERE, "..", "src"), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "climb", ref, "--rungs", "2", "--device", "cpu",
                        "--json", str(out), "--no-history", "--shrink-s", "0"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=600)
    return p, json.loads(out.read_text())


@pytest.mark.parametrize("name", ["log", "bce"])
def test_torch_ops_with_a_range_pass_rung_2(tmp_path, name):
    """log over [1e-3, 9] got 47-71% negative elements (NaN on both sides: nothing tested);
    binary_cross_entropy over [0, 1] failed 84 of 96 points with torch's "between 0 and 1"."""
    p, report = _climb(tmp_path, os.path.join(HERE, "specs", "ranged_ops.py") + "::" + name)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    outcomes = [o for r in report["rungs"] for o in r.get("points", [])]
    ran = [o for o in outcomes if o["status"] == "passed"]
    assert len(ran) >= 10 and not [o for o in outcomes if o["status"] in ("failed", "broken", "flaky")]
    skipped = [o for o in outcomes if o["status"] == "skipped"]
    if name == "log":                 # tiny: no subnormal, smallest-normal or zero value in [1e-3, 9]
        assert skipped and all(o["note"]["kind"] == "value_out_of_range" for o in skipped), skipped
        assert "cannot be drawn inside its declared range" in p.stdout
