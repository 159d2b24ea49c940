"""Rung 6 on the CPU: the generator (three sizes a round across the switches, in changing
order; a lagging rank; the world sizes), the collective mode over gloo with a rank a process
(a correct collective passes; a hang, a raise and a crash are named by rank and call; wrong
calls are counted by rank), and both CPU zoo cases caught by `--rungs 6` alone with clean twins.

The fixture points run in this process (run_point forks the ranks from it, as a worker does);
the zoo cases run through the CLI, as a user climbs them."""
import dataclasses
import os

import pytest
from conftest import zoo_param

import kladder as kl
from kladder.gen.gaps import multi_gpu
from kladder.core.point import Point
from kladder.report.words import message, reason
from kladder.core.rungs import BY_NUMBER
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET, GPU_BUDGET

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "specs", "collectives.py")


@pytest.fixture(scope="module", autouse=True)
def as_in_a_worker():
    """The ranks are forked from this process, as from a worker: set up torch as a worker does
    (outputs the kernel allocates come back NaN-filled), once, before the first fork."""
    import torch
    was = torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    yield
    torch.use_deterministic_algorithms(was[0])
    torch.utils.deterministic.fill_uninitialized_memory = was[1]


def load(name):
    from kladder.gen.load import load_spec
    return load_spec(f"{FIXTURES}::{name}")


def first_point(spec, **over):
    return dataclasses.replace(next(iter(multi_gpu.points(spec, CPU_BUDGET))), **over)


def run(spec, point=None):
    return run_point(spec, point or first_point(spec), "cpu").outcome


def region_of(n, cuts):
    return sum(n >= c for c in cuts)


# ---------------------------------------------------------------------------- generator
def test_three_sizes_a_round_one_per_region_in_every_order():
    spec = load("allreduce")                      # switches at 1 KiB and 8 KiB
    pts = list(multi_gpu.points(spec, CPU_BUDGET))
    assert [dict(p.ranks)["lag"] for p in pts] == [1, 0]           # the last rank lags, then rank 0
    for p in pts:
        seq, item = dict(p.ranks)["sizes"], 4 if dict(p.dtypes)["x"] == "float32" else 2
        cuts = [(1 << 10) // item, (1 << 13) // item]
        rounds = [seq[i:i + 3] for i in range(0, len(seq) - 2, 3)]
        assert all(sorted(region_of(n, cuts) for n in r) == [0, 1, 2] for r in rounds)
        orders = {tuple(region_of(n, cuts) for n in r) for r in rounds}
        assert len(orders) == min(6, len(rounds))                  # the order changes every round
        assert {cuts[0] - 1, cuts[0], cuts[1] - 1, cuts[1]} <= set(seq) | set(_all_candidates(spec, item))
        assert p.sizes["N"] == max(seq) and p.mode == "collective" and p.rung == 6
        assert len(seq) == 12 and p.why.startswith("12 calls of all_reduce queued")
        assert Point.parse(repr(p)) == p                            # the sizes survive the repro line


def _all_candidates(spec, item):
    return [c for reg in multi_gpu.regions(spec, item, CPU_BUDGET) for c in multi_gpu.candidates(reg)]


def test_64_calls_reach_every_candidate_and_every_switch_edge():
    spec = load("allreduce")
    spec = dataclasses.replace(spec, collective=dataclasses.replace(spec.collective, queued=64))
    p = next(iter(multi_gpu.points(spec, CPU_BUDGET)))
    seq = dict(p.ranks)["sizes"]
    assert len(seq) == 64 and set(seq) == set(_all_candidates(spec, 4))
    assert {255, 256, 2047, 2048} <= set(seq)                     # both sides of 1 KiB and 8 KiB (float32)


def test_one_switch_takes_two_sizes_on_alternate_sides():
    spec = load("outarg")                          # one switch at 2 KiB: 512 float32 elements
    seq = dict(first_point(spec).ranks)["sizes"]
    rounds = [[region_of(n, [512]) for n in seq[i:i + 3]] for i in (0, 3)]
    assert sorted(rounds[0]) == [0, 0, 1] and sorted(rounds[1]) == [0, 1, 1]


def test_world_sizes_and_budget():
    spec = load("allreduce")
    wide = dataclasses.replace(spec, dims={"N": kl.Dim(1, 1 << 22)},
                               collective=dataclasses.replace(spec.collective, world=[2, 4], switches=[1 << 20]))
    pts = list(multi_gpu.points(wide, CPU_BUDGET))
    assert [(dict(p.ranks)["world"], dict(p.ranks)["lag"]) for p in pts] == [(2, 1), (2, 0), (4, 3), (4, 0)]
    assert all(p.needs == "cuda" for p in pts)                    # past 1 MiB: over the CPU budget, a GPU point
    assert all(p.needs == "" for p in multi_gpu.points(wide, GPU_BUDGET))
    assert dict(next(iter(multi_gpu.points(wide, GPU_BUDGET))).ranks)["lag_us"] == 200


def test_only_collectives_have_rung_6_points_and_only_at_rung_6():
    good = kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})
    assert list(BY_NUMBER[6].points(good, CPU_BUDGET)) == []
    spec = load("allreduce")
    assert all(list(BY_NUMBER[r].points(spec, CPU_BUDGET)) == [] for r in (1, 2, 3, 4, 8))
    assert len(list(BY_NUMBER[6].points(spec, CPU_BUDGET))) == 2


@pytest.mark.parametrize("over, field", [
    (dict(reference=lambda x: x), "reference"),
    (dict(collective=kl.Collective(world=1)), "collective.world"),
    (dict(collective=kl.Collective(switches=[4096, 1024])), "collective.switches"),
    (dict(collective=kl.Collective(reference="all_to_all")), "collective.reference"),
    (dict(collective=kl.Collective(dim="M")), "collective.dim"),
    (dict(args={"x": kl.Tensor("N", dtype="float32"), "y": kl.Tensor("N", dtype="float32")}), "args"),
])
def test_a_bad_collective_spec_names_the_field(over, field):
    base = dict(kernel=lambda c, x: x, reference=None, args={"x": kl.Tensor("N", dtype="float32")},
                returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)}, collective=kl.Collective())
    with pytest.raises(kl.SpecError) as e:
        kl.Spec("ar", **{**base, **over})
    assert e.value.where == f"Spec('ar').{field}"


# ---------------------------------------------------------------------------- the mode
def test_a_correct_collective_passes_with_what_it_ran():
    for name in ("allreduce", "allgather", "outarg"):
        o = run(load(name))
        assert o.status == "passed", (name, o.findings)
        assert o.note.kind == "collective_calls" and "every output right" in reason(o)


def test_the_watchdog_turns_a_hang_into_a_failure_naming_rank_and_call():
    o = run(load("hang"))                         # rank 1 never returns from its 3rd call; watchdog 2 s
    assert o.status == "failed" and o.headline.check == "ranks_hung"
    places = {p["rank"]: p for p in o.headline.facts.ranks}
    assert places[1]["finished"] == 2 and places[1]["launched"] == 3
    text = message(o.headline)
    assert "rank 1 (lagging) stopped in call 3 of 12" in text and "2 finished" in text
    assert "no rank made progress for" in text and o.headline.call.startswith("rank ")


def test_a_raise_and_a_crash_name_the_rank_and_the_call():
    o = run(load("raises"))
    assert o.headline.check == "raised" and o.headline.call.startswith("rank 0, call 2 of 12")
    assert "the slot table is full" in message(o.headline)
    o = run(load("dies"))                        # rank 1 segfaults in its 4th call; rank 0 then loses its peer
    assert o.headline.check == "crashed" and o.headline.call.startswith("rank 1, call 4 of 12")
    assert "rank 1's process died with SIGSEGV" in message(o.headline)


def test_wrong_calls_are_counted_by_rank_and_the_first_of_each_is_located():
    o = run(load("local"))                       # rank 0 skips the reduction from its 5th call on
    head = o.headline
    assert head.check == "collective" and head.mismatched == 8 and head.total == 24
    assert head.facts.ranks == {"0": list(range(5, 13)), "1": []}
    detail = o.findings[1]
    assert detail.check == "values" and detail.call.startswith("rank 0, call 5 of 12")
    assert "8 of 24 outputs wrong" in message(head) and "rank 1 (lagging) in none of its calls" in message(head)


def test_a_cuda_only_collective_is_skipped_on_the_cpu_with_its_reason():
    spec = load("allreduce")
    gpu = dataclasses.replace(spec, collective=dataclasses.replace(spec.collective, needs="cuda"))
    o = run(gpu, first_point(spec))
    assert o.status == "skipped" and "runs only on CUDA ranks" in reason(o)


# ---------------------------------------------------------------------------- the zoo, through the CLI
ZOO6 = {"allreduce_size_stride": "ranks_hung", "allreduce_relaxed_flag": "collective"}


@pytest.mark.parametrize("case", [zoo_param(c) for c in ZOO6])
def test_zoo_case_is_caught_by_rung_6_alone(case, zoo_case):
    # the zoo's batch climbs each case at its own rung, 6, through the CLI (tests/conftest.py)
    z = zoo_case(case)
    assert z.bug["exit_code"] == 1, z.text[-3000:]
    assert [r["rung"] for r in z.bug["rungs"] if r["climbed"]] == [6]
    pts = z.points("bug", 6)
    # caught at rung 6: a point fails, each failure the case's own; a hang needs a peer that reads
    # late, so on a loaded host a point may pass: allreduce_size_stride's lag=r1 point hung while its
    # other ran its 64 calls through, once in a whole .ci/run and in 1 of 11 runs after it
    # (docs/results/2026-12-07-cpu-suite-fourth)
    failed = [pt for pt in pts if pt["status"] == "failed"]
    assert failed and all(pt["failure"] == ZOO6[case] for pt in failed), z.text[-3000:]
    assert all(pt["status"] in ("failed", "passed") for pt in pts), z.text[-3000:]
    assert "repro:    kladder repro" in z.text and "rank " in z.text
    assert z.twin["exit_code"] == 0 and z.row["twin_clean"]             # and through the CLI too


@pytest.mark.parametrize("case", list(ZOO6))
def test_zoo_twin_is_clean_on_every_rung(case):
    # in this process, point by point (a climb's worker start costs more than the points):
    # every rung's points, which for a collective are rung 6's alone
    from kladder.gen.load import load_spec
    twin = load_spec(f"kladder.zoo.{case}::fixed")
    pts = [p for r in BY_NUMBER.values() if r.built for p in r.points(twin, CPU_BUDGET)]
    assert len(pts) == 2 and {p.rung for p in pts} == {6}
    for p in pts:
        o = run(twin, p)
        assert o.status == "passed", (p.id, [message(f) for f in o.findings])


def test_the_repro_line_carries_the_calls_and_reruns_them():
    # the line a failure prints, read back as `kladder repro` reads it (Point.parse), runs the same
    # calls to the same failure (the CLI's repro wiring is every rung's: tests/test_cli.py)
    import shlex

    from kladder.climbing.ladder import repro_command
    spec = load("local")
    point = first_point(spec)
    argv = shlex.split(repro_command(f"{FIXTURES}::local", "cpu", point))
    assert argv[:2] == ["kladder", "repro"] and argv[-2:] == ["--device", "cpu"]
    again = Point.parse(argv[3])
    assert again == dataclasses.replace(point, why="")           # the repro line leaves out only the why
    o = run(spec, again)
    assert o.headline.check == "collective" and o.headline.facts.ranks == {"0": list(range(5, 13)), "1": []}
