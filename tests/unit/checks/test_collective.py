"""checks/collective.py: a collective's ranks judged from what they returned (no process started
here): a correct run is clean; a wrong call's values, guard bytes, contract and device are found,
counted by rank and size, with the first wrong call of each rank kept; a hang, a raise, a device
fault and a death are each their own finding naming the rank and the call."""
import json

import torch

import kladder as kl
from kladder.checks.collective import call_findings, judge
from kladder.core.outcome import Check, Finding
from kladder.core.point import Point
from kladder.run.modes.base import Ended, RankCall, RankPlace, Ranks


def _kernel(comm, x):
    return x


SPEC = kl.Spec("ar", kernel=_kernel, reference=None, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 1 << 14)},
               collective=kl.Collective(world=2, switches=[1024], queued=4))
PT = Point("ar", 6, (("N", 64),), dtypes=(("x", "float32"),))


def _call(rank, call, size, out=None, expected=None, **kw):
    ref = torch.arange(size, dtype=torch.float64) * (rank + 1)
    return RankCall(rank, call, size, {"out": ref.float() if out is None else out}, {"out": ref if expected is None else expected},
                    kw.pop("damaged", {}), label=f"rank {rank}, call {call + 1} of 4 (N={size})", **kw)


def _ranks(calls, how="done", **ended):
    sizes = sorted({c.size for c in calls}) or [8]
    return Ranks(2, 1, [c.size for c in calls if c.rank == 0] or sizes, calls, Ended(how, **ended))


def test_every_call_right_is_clean():
    calls = [_call(r, c, s) for r in (0, 1) for c, s in enumerate((8, 300, 1024, 2000))]
    assert judge(SPEC, PT, _ranks(calls), "cpu") == []


def test_wrong_calls_are_counted_by_rank_and_size_and_each_ranks_first_is_located():
    calls = [_call(r, c, s) for r in (0, 1) for c, s in enumerate((8, 300, 1024, 2000))]
    stale = calls[2].outputs["out"].clone()
    stale[5] = -1.0
    calls[2] = _call(0, 2, 1024, out=stale)                      # rank 0, call 3
    calls[3] = _call(0, 3, 2000, out=torch.zeros(2000))          # rank 0, call 4: stale data
    calls[7] = _call(1, 3, 2000, out=torch.zeros(2000))          # rank 1, call 4
    found = judge(SPEC, PT, _ranks(calls), "cpu")
    summary, first0, first1 = found
    assert summary.check == Check.COLLECTIVE and summary.output == "out" and (summary.mismatched, summary.total) == (3, 8)
    assert summary.facts.ranks == {"0": [3, 4], "1": [4]} and summary.facts.sizes_wrong == [1024, 2000]
    assert summary.facts.sizes == [8, 300, 1024, 2000] and summary.facts.world == 2 and summary.facts.lag == 1
    assert summary.facts.dim == "N" and summary.facts.kinds == ["values"] and summary.facts.queued == 4
    assert first0.check == Check.VALUES and first0.call == "rank 0, call 3 of 4 (N=1024)" and first0.mismatched == 1
    assert first0.largest.index == (5,)
    assert first1.call == "rank 1, call 4 of 4 (N=2000)"
    for f in found:
        assert Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False))) == f


def test_rounding_within_the_tolerance_is_no_wrong_call():
    c = _call(0, 0, 512)
    c.outputs["out"] = (c.expected["out"] * (1 + 1e-7)).float()
    assert call_findings(SPEC, PT, c, "cpu") == []
    c.outputs["out"] = (c.expected["out"] * (1 + 1e-3)).float()
    (f,) = call_findings(SPEC, PT, c, "cpu")
    assert f.check == Check.VALUES and f.facts.mode == "collective" and f.facts.shape == [512]


def test_the_message_dim_sets_each_calls_shape():
    c = _call(0, 0, 300)
    assert call_findings(SPEC, PT, c, "cpu") == []              # 300 elements though the point says N = 64
    c.outputs["out"] = torch.zeros(64)
    (f,) = call_findings(SPEC, PT, c, "cpu")
    assert f.check == Check.CONTRACT and f.facts.problems[0][0] == "shape"


def test_guard_bytes_come_first_and_a_non_tensor_is_a_contract_finding():
    c = _call(1, 0, 16, damaged={"out": ([], [0, 1, 2, 3])})
    g, = call_findings(SPEC, PT, c, "cpu")
    assert g.check == Check.GUARD and g.mismatched == 4 and g.facts.itemsize == 4
    c = _call(1, 0, 16, returned={"out": "NoneType"})
    (f,) = call_findings(SPEC, PT, c, "cpu")
    assert f.check == Check.CONTRACT and f.facts.not_tensor == "NoneType"


def test_an_output_on_another_device_is_a_contract_finding():
    c = _call(0, 0, 16, devices={"out": "cpu"})
    assert call_findings(SPEC, PT, c, "cpu") == []
    c = _call(0, 0, 16, devices={"out": "cpu"})
    (f,) = call_findings(SPEC, PT, c, "cuda")
    assert f.facts.problems == [["device", "cpu", "cuda"]]
    c = _call(0, 0, 16, devices={"out": "cuda:1"})
    assert call_findings(SPEC, PT, c, "cuda") == []             # any card of the device's kind
    c = _call(0, 0, 16, devices={"out": "cpu"})
    c.outputs["out"] = torch.zeros(15)
    (f,) = call_findings(SPEC, PT, c, "cuda")
    assert [p[0] for p in f.facts.problems] == ["shape", "device"]    # both problems in one finding


def test_a_hang_is_one_finding_with_where_each_rank_was():
    places = [RankPlace(0, "waiting", 4, 3, 2000), RankPlace(1, "call", 3, 2, None)]
    seen = _ranks([], "hung", ranks=places, watchdog_s=10.0, waited_s=10.5, queued=4, dim="N", label="rank 1, call 3")
    (f,) = judge(SPEC, PT, seen, "cpu")
    assert f.check == Check.RANKS_HUNG and f.call == "rank 1, call 3"
    assert (f.facts.watchdog_s, f.facts.waited_s, f.facts.queued, f.facts.dim, f.facts.lag) == (10.0, 10.5, 4, "N", 1)
    assert f.facts.ranks[1]["rank"] == 1 and f.facts.ranks[0]["finished"] == 3
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False))) == f


def test_a_raise_a_device_fault_and_a_death_each_name_the_call():
    (f,) = judge(SPEC, PT, _ranks([], "raised", error="ValueError", text="bad size", label="rank 0, call 2"), "cpu")
    assert f.check == Check.RAISED and f.facts.error == "ValueError" and f.call == "rank 0, call 2"
    (f,) = judge(SPEC, PT, _ranks([], "raised", kind="device_fault", error="CUDA error", text="illegal address"), "cpu")
    assert f.check == Check.DEVICE_FAULT and f.facts.in_call and f.facts.text == "illegal address"
    (f,) = judge(SPEC, PT, _ranks([], "died", rank=1, signal="SIGSEGV", label="rank 1, call 4"), "cpu")
    assert f.check == Check.CRASHED and f.facts.rank == 1 and f.facts.signal == "SIGSEGV" and f.facts.frames == []
