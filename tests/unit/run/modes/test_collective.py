"""run/modes/collective.py without starting ranks: whether a world can run here, the watchdog
over fake rank processes (done, a failure, a hang with each rank's place), how one failure among
ranks is told (a crash first, then the earliest raise, then kladder's side), the call a finding
names, what is not the kernel's to judge, and the ranks' records read back. The ranks themselves
are processes (forked on the CPU): tests/test_rung6*.py climb them."""
import json
import os
import signal
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import save_file

from kladder.core.outcome import KernelError, Note, NoteKind, Skip, SpecBroken
from kladder.run.modes import collective as co
from kladder.run.modes.base import Ended, RankPlace, Ranks
from kladder.run.rank import PHASE


# ---------------------------------------------------------------------------- can it run here
def test_a_cuda_only_protocol_is_skipped_on_the_cpu_and_others_run():
    with pytest.raises(Skip) as e:
        co._runnable(SimpleNamespace(needs="cuda", share_device=False), 4, "cpu")
    assert e.value.note.kind == NoteKind.COLLECTIVE_NEEDS_CUDA and e.value.note.facts.world == 4
    assert co._runnable(SimpleNamespace(needs="", share_device=False), 4, "cpu") is None
    assert co._own_gpus("cpu", 1) is False


@pytest.mark.skipif(torch.cuda.is_available(), reason="counts the GPUs of a host without any")
def test_more_ranks_than_gpus_is_skipped_unless_ranks_may_share_one():
    with pytest.raises(Skip) as e:
        co._runnable(SimpleNamespace(needs="", share_device=False), 2, "cuda")
    assert e.value.note.kind == NoteKind.NOT_ENOUGH_GPUS and e.value.note.facts.to_dict() == {"world": 2, "gpus": 0}
    assert co._runnable(SimpleNamespace(needs="", share_device=True), 2, "cuda") is None


# ---------------------------------------------------------------------------- the watchdog
class _Proc:
    def __init__(self, codes):
        self.codes, self.killed, self.returncode = list(codes), False, None

    def poll(self):
        if self.returncode is None and self.codes:
            self.returncode = self.codes.pop(0)
        return self.returncode

    def kill(self):
        if self.poll() is None:
            self.killed, self.returncode = True, -signal.SIGKILL


class _Progress:
    def __init__(self, *rows):
        self.rows = list(rows)

    def snapshot(self):
        return list(self.rows)


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(co, "POLL_S", 0.0)
    monkeypatch.setattr(co, "GRACE_S", 0.0)


def test_every_rank_done_is_done(quick, tmp_path):
    ended = co._watch([_Proc([None, 0]), _Proc([0])], _Progress((PHASE["done"], 2, 2)) , 5.0, 5.0, 9.0, str(tmp_path))
    assert ended == Ended(how="done")


def test_no_rank_moving_past_the_watchdog_is_a_hang_with_each_ranks_place(quick, tmp_path):
    procs = [_Proc([]), _Proc([])]
    progress = _Progress((PHASE["calls"], 5, 3), (PHASE["sync"], 5, 5))
    ended = co._watch(procs, progress, 0.01, 5.0, 9.0, str(tmp_path))
    assert ended.how == "hung" and ended.watchdog_s == 0.01 and all(p.killed for p in procs)
    assert ended.ranks == [RankPlace(0, "calls", 5, 3), RankPlace(1, "sync", 5, 5)]


def test_ranks_still_starting_get_the_startup_bound_not_the_watchdogs(quick, tmp_path):
    procs = [_Proc([None] * 3 + [0])]
    ended = co._watch(procs, _Progress((PHASE["joining"], 0, 0)), 0.0, 5.0, 9.0, str(tmp_path))
    assert ended.how == "done"                       # a watchdog of 0 s, but the rank had not started


def test_a_rank_that_crashed_is_told_before_the_raises_of_its_peers(quick, tmp_path):
    procs = [_Proc([0]), _Proc([-signal.SIGSEGV])]
    progress = _Progress((PHASE["done"], 4, 4), (PHASE["calls"], 3, 2))
    ended = co._watch(procs, progress, 5.0, 5.0, 9.0, str(tmp_path))
    assert (ended.how, ended.rank, ended.signal, ended.call, ended.phase) == ("died", 1, "SIGSEGV", 2, "calls")


def _records(d, *ended):
    for rank, e in enumerate(ended):
        if e is not None:
            with open(os.path.join(d, f"rank{rank}.json"), "w") as f:
                json.dump({"ended": e.to_dict(), "calls": []}, f)


def test_of_several_raises_the_earliest_is_the_cause(quick, tmp_path):
    _records(tmp_path, Ended(how="raised", rank=0, call=3, error="RuntimeError", text="peer closed", at=20.0),
             Ended(how="raised", rank=1, call=2, error="IndexError", text="out of range", at=10.0))
    procs = [_Proc([1]), _Proc([1])]
    ended = co._failed(procs, _Progress((PHASE["calls"], 4, 3), (PHASE["calls"], 3, 2)), 0, str(tmp_path))
    assert (ended.rank, ended.error) == (1, "IndexError")


def test_kladders_side_is_told_when_nothing_raised_and_a_silent_exit_says_so(quick, tmp_path):
    _records(tmp_path, None, Ended(how="broken", rank=1, phase="saving", error="OSError", text="disk full"))
    progress = _Progress((PHASE["calls"], 1, 0), (PHASE["saving"], 1, 1))
    assert co._failed([_Proc([None]), _Proc([4])], progress, 1, str(tmp_path)).text == "disk full"
    ended = co._failed([_Proc([None]), _Proc([7])], _Progress((PHASE["calls"], 1, 0), (PHASE["inputs"], 0, 0)), 1,
                       str(tmp_path / "nothing"))
    assert (ended.how, ended.rank, ended.phase, ended.error) == ("broken", 1, "inputs", "exit")
    assert "status 7 and left no record" in ended.text


def test_a_rank_killed_by_the_watchdog_is_no_crash(quick, tmp_path):
    _records(tmp_path, Ended(how="raised", rank=0, call=0, error="ValueError", at=1.0))
    procs = [_Proc([3]), _Proc([])]                        # rank 1 never ends: killed after the grace
    ended = co._failed(procs, _Progress((PHASE["calls"], 1, 0), (PHASE["calls"], 1, 0)), 0, str(tmp_path))
    assert procs[1].killed and ended.how == "raised" and ended.rank == 0


def test_a_record_unreadable_or_missing_is_none(tmp_path):
    (tmp_path / "rank0.json").write_text("{not json")
    assert co._record(str(tmp_path), 0) is None and co._record(str(tmp_path), 1) is None


# ---------------------------------------------------------------------------- the call a finding names
SIZES = [8, 2047, 2048]


def test_a_raise_names_its_call_and_before_the_first_the_setup():
    raised = co._labelled(Ended(how="raised", rank=1, call=1), SIZES, "N")
    assert raised.label == "rank 1, call 2 of 3 (N=2047)"
    assert co._labelled(Ended(how="died", rank=0, call=-1), SIZES, "N").label == "rank 0, setup"
    assert co._labelled(Ended(how="done"), SIZES, "N") == Ended(how="done")


def test_a_hang_names_the_most_behind_ranks_call_and_each_ranks_size():
    hung = Ended(how="hung", ranks=[RankPlace(0, "done", 3, 3), RankPlace(1, "calls", 3, 1), RankPlace(2, "calls", 3, 1)])
    got = co._labelled(hung, SIZES, "N")
    assert got.label == "rank 1, call 2 of 3 (N=2047)" and (got.queued, got.dim) == (3, "N")
    assert [p.size for p in got.ranks] == [None, 2047, 2047]           # past the last call: no size


def test_a_hang_after_every_call_names_the_last():
    got = co._labelled(Ended(how="hung", ranks=[RankPlace(0, "sync", 3, 3)]), SIZES, "N")
    assert got.label == "rank 0, call 3 of 3 (N=2048)"


# ---------------------------------------------------------------------------- what is not the kernel's
def test_memory_and_kladders_side_are_not_the_kernels_verdict():
    with pytest.raises(MemoryError, match="rank 1 .setup.: no memory"):
        co._raise_unjudgeable(Ended(how="oom", rank=1, phase="setup", text="no memory"))
    with pytest.raises(KernelError) as e:
        co._raise_unjudgeable(Ended(how="raised", rank=0, call=4, kind="oom", text="CUDA out of memory"))
    assert isinstance(e.value.error, MemoryError) and e.value.label == "rank 0, call 5"
    with pytest.raises(SpecBroken) as e:
        co._raise_unjudgeable(Ended(how="broken", rank=1, note=Note.of(NoteKind.PROCESS_FAILED, label="x", text="y")))
    assert e.value.note.kind == NoteKind.PROCESS_FAILED
    with pytest.raises(SpecBroken) as e:
        co._raise_unjudgeable(Ended(how="broken", rank=1, phase="joining", error="exit", text="gone"))
    assert e.value.note.kind == NoteKind.RANK_FAILED and e.value.note.facts.phase == "joining"


def test_a_hang_outside_the_kernels_phases_is_kladders_and_inside_them_the_kernels():
    outside = Ended(how="hung", waited_s=10.0, ranks=[RankPlace(0, "done", 1, 1), RankPlace(1, "saving", 1, 1)])
    with pytest.raises(SpecBroken) as e:
        co._raise_unjudgeable(outside)
    assert (e.value.note.facts.rank, e.value.note.facts.phase, e.value.note.facts.error) == (1, "saving", "hang")
    for phase in co.KERNEL_PHASES:
        co._raise_unjudgeable(Ended(how="hung", ranks=[RankPlace(0, phase, 1, 0), RankPlace(1, "saving", 1, 1)]))
    co._raise_unjudgeable(Ended(how="raised", kind="raised"))
    co._raise_unjudgeable(Ended(how="done"))


# ---------------------------------------------------------------------------- results read back
def test_each_ranks_calls_are_read_back_with_outputs_references_and_damage(tmp_path):
    spec = SimpleNamespace(outputs=["out"], message_dim="N")
    for rank in range(2):
        save_file({"out.0.out": torch.full((2,), float(rank)), "ref.0.out": torch.zeros(2),
                   "ref.1.out": torch.ones(3)}, str(tmp_path / f"rank{rank}.safetensors"))
        calls = [{"call": 0, "size": 2, "damaged": {}, "returned": {}, "devices": {"out": "cpu"}},
                 {"call": 1, "size": 3, "damaged": {"out": [0, 4]}, "returned": {"out": "None"}, "devices": {}}]
        (tmp_path / f"rank{rank}.json").write_text(json.dumps({"calls": calls}))
    got = co._read(spec, str(tmp_path), 2, [2, 3])
    assert [(c.rank, c.call, c.size) for c in got] == [(0, 0, 2), (0, 1, 3), (1, 0, 2), (1, 1, 3)]
    assert got[2].outputs["out"].tolist() == [1.0, 1.0] and got[1].outputs["out"] is None
    assert got[1].expected["out"].tolist() == [1.0, 1.0, 1.0] and got[1].damaged == {"out": (0, 4)}
    assert got[3].label == "rank 1, call 2 of 2 (N=3)" and got[0].devices == {"out": "cpu"}


def test_the_ranks_are_judged_on_one_thread_and_the_threads_restored():
    before = torch.get_num_threads()
    seen = Ranks(2, 1, [8], [], Ended(how="done"))
    gen = co._judged_on_one_thread(seen)
    assert next(gen) is seen and torch.get_num_threads() == 1
    with pytest.raises(StopIteration):
        next(gen)
    assert torch.get_num_threads() == before


def test_ranks_that_keep_moving_past_the_points_deadline_still_end_as_a_hang(quick, tmp_path):
    class Moving:
        n = 0

        def snapshot(self):
            Moving.n += 1
            return [(PHASE["calls"], Moving.n, Moving.n)]
    ended = co._watch([_Proc([])], Moving(), 60.0, 60.0, 0.0, str(tmp_path))
    assert ended.how == "hung" and ended.ranks[0].phase == "calls"
