"""The budget in words a person reads at once (report/words/values.budget_headline): one line,
"allowed 0.0034 = float16 default (a float16 implementation is off by up to 0.0013 here)",
made from typed facts (budget_allowed, budget_default, budget_peer_error at budget_at) on real
findings; the derivation one level down (budget_text: the terminal's -v, the HTML's details,
the JSON's budget_details and facts)."""
import re

import torch

from kladder.checks import peer
from kladder.checks.pattern import Where
from kladder.checks.values import compare
from kladder.report.jsonout import finding_dict
from kladder.report.words import budget_headline, budget_text, message
from kladder.core.spec import DEFAULT_TOLERANCES, Tolerance

F32 = DEFAULT_TOLERANCES["float32"]


def _kernel_and_peer(seed=3):
    g = torch.Generator().manual_seed(seed)
    ref = 100 * torch.randn(8, 256, generator=g, dtype=torch.float64)
    noise = torch.randn(8, 256, generator=g, dtype=torch.float64)
    kernel = (ref * (1 + 1e-6 * noise)).to(torch.float32)              # a correct float32 kernel at a long K
    honest = (ref * (1 + 1e-6 * noise.roll(1, 1))).to(torch.float32)   # its peer: the same size of error, elsewhere
    return ref, kernel, honest


def _number(text: str, after: str) -> float:
    return float(re.search(re.escape(after) + r" ([0-9.e+-]+)", text).group(1))


def test_a_default_budget_says_the_number_the_dtype_and_what_a_peer_is_off_by():
    ref, _, _ = _kernel_and_peer()
    exact = ref.to(torch.float32)                                       # a peer off by the output's rounding alone
    wrong = exact.clone()
    wrong[2, 5] *= 1.01                                                  # a real 1% error
    f = compare("y", wrong, ref, F32, Where(("M", "N")), {"dtype": "float32", "shape": [8, 256], "mode": "eager"},
                peer=exact, unit=peer.UNIT_ROUNDOFF["float32"])
    x = f.facts
    assert x.budget == "default" and x.budget_at == [2, 5] and f.largest.index == (2, 5)
    short = budget_headline(f)
    assert short.startswith("allowed ") and "= float32 default (a float32 implementation is off by" in short
    assert "\n" not in short and len(short) < 100                       # one line, read at once
    assert abs(_number(short, "allowed") - f.largest.allowed) <= 0.05 * f.largest.allowed
    assert x.budget_allowed == x.budget_default                          # the default is what applied there
    assert 0 <= x.budget_peer_error < x.budget_allowed                   # a correct float32 peer is inside it
    assert "honest peers allow no more" in budget_text(x)                # the derivation, one level down
    assert short in message(f) and budget_text(x) not in message(f)


def test_a_peer_budget_says_C_times_the_peers_error_and_the_default_it_exceeds():
    g = torch.Generator().manual_seed(4)
    ref = 100 * torch.randn(16, 512, generator=g, dtype=torch.float64)
    noise = torch.randn(16, 512, generator=g, dtype=torch.float64)
    kernel = (ref * (1 + 3e-5 * noise)).to(torch.float32)               # rounding past 8 x the default
    honest = (ref * (1 + 3e-5 * noise.roll(1, 1))).to(torch.float32)
    wrong = kernel.clone()
    wrong[3, 9] = ref[3, 9] * 1.5                                        # one element half off: not rounding
    f = compare("y", wrong, ref, F32, Where(("M", "N")), {"dtype": "float32", "shape": [16, 512], "mode": "eager"},
                peer=honest, unit=peer.UNIT_ROUNDOFF["float32"])
    x = f.facts
    assert f.mismatched == 1 and x.budget == "peer" and x.budget_at == [3, 9]
    short = budget_headline(f)
    assert short.startswith(f"allowed {x.budget_allowed:.2g} = 2 x what a float32 implementation is off by here")
    assert f"more than the float32 default ({x.budget_default:.2g})" in short
    assert x.budget_allowed > x.budget_default and x.budget_peer_error > 0
    assert "2 x K x s" in budget_text(x)


def test_a_finding_without_peers_says_the_tolerance_it_had():
    r = torch.randn(4, 37, dtype=torch.float64)
    o = r.to(torch.bfloat16)
    o[1, 3] = float("nan")
    f = compare("y", o, r, DEFAULT_TOLERANCES["bfloat16"], Where(("M", "N")),
                {"dtype": "bfloat16", "shape": [4, 37], "mode": "eager"})
    assert budget_headline(f) == f"allowed {f.largest.allowed:.2g} = bfloat16 default" and budget_text(f.facts) == ""
    mine = compare("y", o, r, Tolerance(0.5, 0.5), Where(("M", "N")), {"dtype": "bfloat16", "shape": [4, 37], "mode": "eager"})
    assert budget_headline(mine).endswith("= the spec's tolerance")    # never called a default it is not


def test_the_json_has_the_line_and_the_derivation_apart():
    ref, kernel, honest = _kernel_and_peer()
    wrong = kernel.clone()
    wrong[2, 5] *= 1.1
    f = compare("y", wrong, ref, F32, Where(("M", "N")), {"dtype": "float32", "shape": [8, 256], "mode": "eager"},
                peer=honest, unit=peer.UNIT_ROUNDOFF["float32"])
    d = finding_dict(f)
    assert d["budget"] == budget_headline(f) and d["budget_details"] == budget_text(f.facts)
    assert d["facts"]["budget_at"] == [2, 5] and d["facts"]["budget_allowed"] > 0


def test_a_zoo_climbs_failures_read_at_once_in_the_terminal_and_derive_with_v():
    """layernorm_dw_half_accum's float16 dweight at rung 2 on the CPU (a zoo point as a climb ran it)."""
    import json

    from kladder.tools.cases import case_ref
    from kladder.gen.load import load_spec
    from kladder.core.outcome import Status
    from kladder.core.point import Point
    from kladder.report.terminal import render_outcome
    from kladder.run.trial import run_point
    point = Point.parse(json.dumps({"spec": "layer_norm", "rung": 2, "dims": [["M", 17], ["N", 17]],
                                    "dtypes": [["x", "float16"]], "kind": "values", "seed": 3793475643,
                                    "values": [["x", "peaked/30"]]}))
    o = run_point(load_spec(case_ref("layernorm_dw_half_accum", False)), point, "cpu").outcome
    assert o.status == Status.FAILED
    f = o.headline
    short, long = budget_headline(f), budget_text(f.facts)
    assert short.startswith("allowed ") and "float16" in short and long and len(short) < len(long) / 2
    plain, verbose = render_outcome(o), render_outcome(o, verbose=True)
    assert f"  budget:   {short}" in plain and long not in plain
    assert long in verbose


def test_a_finding_of_another_check_has_no_budget_in_the_json():
    from kladder.core.facts import GuardFacts
    from kladder.core.outcome import Check, Finding
    d = finding_dict(Finding(Check.GUARD, "y", facts=GuardFacts(itemsize=4, n_after=4, n_before=0, after_lo=0, after_hi=3)))
    assert d["budget"] is None and d["budget_details"] is None
