"""Evidence where it decides (issue 32, item 4): the honest peer runs only where the verdict depends
on it. An output off by more than checks/values.PEER_DECIDES x its default budget fails at once,
with no peer stage, and says why; one near its budget still gets its peers."""
import pytest
import torch

import kladder as kl
from kladder.checks import values
from kladder.core.facts import PeerNotNeededFacts
from kladder.core.outcome import Stage, Status
from kladder.core.point import Point
from kladder.report.words import budget_headline, budget_text
from kladder.run.trial import run_point
from kladder.core.spec import DEFAULT_TOLERANCES


def _gemv(off: float) -> kl.Spec:
    def kernel(x, w):
        y = x @ w.T
        return y * (1 + off)
    return kl.Spec("gemv_off", kernel=kernel, reference=lambda x, w: x @ w.T,
                   args={"x": kl.Tensor("M K", dtype="float32"), "w": kl.Tensor("N K", like="x")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 4), "N": kl.Dim(1, 512), "K": kl.Dim(1, 4096)})


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


POINT = Point("gemv_off", 1, (("M", 1), ("N", 512), ("K", 4096)))


def test_a_gemv_off_by_8_percent_is_judged_at_once_with_no_peer():
    o = run_point(_gemv(0.08), POINT, "cpu").outcome
    assert o.status == Status.FAILED
    assert Stage.PEERS not in o.stages                     # no peer stage ran
    f = o.headline
    assert isinstance(f.facts.peer, PeerNotNeededFacts) and f.facts.peer.decides == values.PEER_DECIDES
    assert f.facts.peer.times > values.PEER_DECIDES and f.facts.budget == "default"
    line = budget_headline(f)
    assert line.startswith("allowed ") and "float32 default (no honest peer needed: off by " in line
    assert f"past the {values.PEER_DECIDES:,.0f} x within which" in line
    assert "no honest peer needed" in budget_text(f.facts)
    assert f.to_dict()["facts"]["peer"] == {"times": f.facts.peer.times, "decides": values.PEER_DECIDES}


def test_a_gemv_off_near_its_budget_still_asks_its_peers():
    tol = DEFAULT_TOLERANCES["float32"]
    o = run_point(_gemv(20 * tol.rtol), POINT, "cpu").outcome       # ~20 x the default: the peers decide
    assert o.status == Status.FAILED and Stage.PEERS in o.stages
    assert not isinstance(o.headline.facts.peer, PeerNotNeededFacts)


def test_beyond_peers_reads_the_worst_element_against_its_default():
    tol = DEFAULT_TOLERANCES["float32"]
    ref = torch.randn(3, 64, dtype=torch.float64)
    close = (ref + 50 * tol.rtol * ref.abs().max()).float()
    far = ref.float().clone()
    far[1, 7] += 1.0                                     # one element far off: that decides
    assert values.beyond_peers(values.mismatch(close, ref, tol), close, ref, tol) is None
    times = values.beyond_peers(values.mismatch(far, ref, tol), far, ref, tol)
    assert times is not None and times > values.PEER_DECIDES
    nan = ref.float().clone()
    nan[0, 0] = float("nan")                              # not excusable, and no ratio: no gate from it
    assert values.beyond_peers(values.mismatch(nan, ref, tol), nan, ref, tol) is None


def test_the_decides_factor_is_past_every_widening_a_peer_granted_a_correct_op():
    """The margin the factor keeps: the largest widening a correct op got on the false-alarm suite
    (20 x, docs/results/2026-12-07-cpu-peer-gate) and the cap's half digits of float32 (188 x)."""
    from kladder.checks import peer
    u = peer.UNIT_ROUNDOFF["float32"]
    half_digits = (u ** peer.HALF_DIGITS) / DEFAULT_TOLERANCES["float32"].rtol     # 188 x the float32 default
    decides = values.PEER_DECIDES
    assert decides > 20 * 10 and decides > 5 * half_digits
