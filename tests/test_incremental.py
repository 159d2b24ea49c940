"""Incremental climbs (issue 32 item 1): the outcome store (history/outcomes.py) keeps every
outcome under the key of all that decides it (history/key.py); a re-climb reuses a passed one
whose key is unchanged and runs the rest. A one-character change of a Triton kernel's source, of
the reference, of the spec's dims, of a config, and the toolchain's version (faked through the
key's seam) each re-runs every affected point and no other; failed points always run again;
rung 5's evidence adds up across climbs."""
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from kladder.history import key as keymod
from kladder.history.outcomes import OutcomeStore
from kladder.climbing.ladder import Options, climb
from kladder.gen.load import load_spec
from kladder.core.outcome import Note, NoteKind, Outcome, Status
from kladder.core.point import Point
from kladder.run.pool import Pool

KERN = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _{name}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n)
    tl.store(y_ptr + i, x * {factor}.0, mask=i < n)


def {name}(x, BLOCK={block}):
    y = torch.empty_like(x)
    _{name}[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK=BLOCK)
    return y
'''

SPEC = '''
import kladder as kl
from kern_{name} import {name}


def helper_nobody_calls():
    return 1


def ref(x):
    return {factor} * x


spec = kl.Spec("{name}", kernel={name}, reference=ref, args={{"x": kl.Tensor("N", dtype="float32")}},
               returns=kl.Tensor("N", like="x"), dims={{"N": kl.Dim(1, {top}, tile={tile})}}{configs})
'''


def _write(folder, name, factor, block, top, tile, configs=""):
    (folder / f"kern_{name}.py").write_text(KERN.format(name=name, factor=factor, block=block))
    (folder / f"spec_{name}.py").write_text(SPEC.format(name=name, factor=factor, top=top, tile=tile, configs=configs))


def _edit(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, (old, text)
    path.write_text(text.replace(old, new))


class Climber:
    """In-process climbs of rung 1 with one store; each climb's spec loaded afresh (a new file
    version), its workers in a pool of its own (`started`: whether any worker was asked for)."""

    def __init__(self, folder, store):
        self.folder, self.store = folder, store

    def __call__(self, name, rungs=(1,), **opts):
        ref = str(self.folder / f"spec_{name}.py")
        spec = load_spec(ref)
        pool = Pool(ref, "cpu", spares=1)
        try:
            report = climb(ref, spec, Options(rungs=rungs, device="cpu", store=self.store, pool=pool, jobs=1, **opts))
        finally:
            started = bool(pool.hello)
            pool.close()
        ran = {o.point.id for o in report.outcomes if o.reused is None}
        reused = {o.point.id for o in report.outcomes if o.reused is not None}
        return report, ran, reused, started


@pytest.fixture(scope="module")
def edits(tmp_path_factory):
    """Two specs, each with a Triton kernel of its own module and a reference in its spec file,
    climbed (rung 1) cold, again, then after each one-character change; what each climb ran."""
    d = tmp_path_factory.mktemp("incr")
    _write(d, "double", 2, 64, 200, 64, configs=',\n               configs=[{"BLOCK": 64}, {"BLOCK": 128}]')
    _write(d, "triple", 3, 32, 100, 32)
    store = OutcomeStore(str(d / "history.sqlite"))
    up = Climber(d, store)
    steps = {}

    def both(step):
        steps[step] = {n: up(n) for n in ("double", "triple")}

    both("cold")
    both("again")
    _edit(d / "kern_double.py", "x * 2.0,", "x * 2.00,")                  # one character of a Triton kernel
    both("kernel")
    _edit(d / "spec_triple.py", "return 3 * x", "return 3.* x")           # one character of the reference (3 -> 3.)
    both("reference")
    _edit(d / "spec_double.py", "return 1", "return 2")                   # a function the reference never calls
    both("unrelated")
    _edit(d / "spec_double.py", "kl.Dim(1, 200, tile=64)", "kl.Dim(1, 201, tile=64)")   # the dims' range
    both("dims")
    _edit(d / "spec_double.py", '{"BLOCK": 128}', '{"BLOCK": 256}')       # a config
    both("config")
    real = keymod.TOOLCHAIN
    keymod.TOOLCHAIN = lambda fp: {**real(fp), "torch": "2.99.0"}         # the seam: another toolchain
    try:
        both("toolchain")
        both("toolchain again")
    finally:
        keymod.TOOLCHAIN = real
    _edit(d / "spec_triple.py", "tile=32", "tile=16")                     # a tile: every point's words change
    both("tile")
    store.close()
    return steps


def test_a_second_climb_reuses_every_passed_point_and_starts_no_worker(edits):
    for name in ("double", "triple"):
        report, ran, reused, started = edits["again"][name]
        cold = edits["cold"][name][0]
        assert all(o.status == Status.PASSED for o in cold.outcomes) and len(cold.outcomes) > 3
        assert ran == set() and reused == {o.point.id for o in cold.outcomes}
        assert not started                                    # no worker was even asked for
        assert report.reuse.reused == len(cold.outcomes) and report.reuse.ran == 0
        assert {o.reused.run_id for o in report.outcomes} == {cold.run_id}
        assert [o.point for o in report.outcomes] == [o.point for o in cold.outcomes]


def test_one_character_of_a_triton_kernel_reruns_its_specs_points_and_no_other(edits):
    _, ran, reused, _ = edits["kernel"]["double"]
    assert reused == set() and ran == {o.point.id for o in edits["cold"]["double"][0].outcomes}
    assert edits["kernel"]["double"][0].reuse.changed == ["kernel"]
    _, ran, _, started = edits["kernel"]["triple"]
    assert ran == set() and not started


def test_one_character_of_the_reference_reruns_its_specs_points_and_no_other(edits):
    report, ran, reused, _ = edits["reference"]["triple"]
    assert reused == set() and len(ran) == len(report.outcomes)
    assert report.reuse.changed == ["reference"]
    assert edits["reference"]["double"][1] == set()


def test_a_function_the_reference_does_not_call_changes_nothing(edits):
    # (a whitespace or comment edit of the reference's own lines changes no code either: keyed by its code object)
    # the reference is keyed by its code and what it names, not by its file's every byte
    assert edits["unrelated"]["double"][1] == set() and edits["unrelated"]["triple"][1] == set()


def test_the_dims_range_reruns_only_the_points_it_made_new(edits):
    before = {o.point.id for o in edits["unrelated"]["double"][0].outcomes}
    report, ran, reused, _ = edits["dims"]["double"]
    now = {o.point.id for o in report.outcomes}
    assert ran == now - before and ran and all("N=201" in i for i in ran)
    assert reused == now & before
    assert edits["dims"]["triple"][1] == set()


def test_a_config_reruns_only_the_points_at_that_config(edits):
    report, ran, reused, _ = edits["config"]["double"]
    at_256 = {o.point.id for o in report.outcomes if dict(o.point.config).get("BLOCK") == 256}
    assert ran == at_256 and at_256
    assert reused == {o.point.id for o in report.outcomes} - at_256 and reused
    assert edits["config"]["triple"][1] == set()


def test_the_toolchain_version_reruns_every_point_of_every_spec(edits):
    for name in ("double", "triple"):
        report, ran, reused, _ = edits["toolchain"][name]
        assert reused == set() and len(ran) == len(report.outcomes)
        assert report.reuse.changed == ["toolchain"]
        assert edits["toolchain again"][name][1] == set()     # the same (faked) toolchain again: all reused


def test_a_tile_reruns_every_point_of_its_spec(edits):
    report, ran, reused, _ = edits["tile"]["triple"]
    assert reused == set() and len(ran) == len(report.outcomes)
    assert edits["tile"]["double"][1] == set()


# ---------------------------------------------------------------------------- failures, --fresh, rung 5
FLAKY_SPEC = '''
import kladder as kl


def kernel(x):
    return 2 * x if x.numel() != 7 else 3 * x      # wrong at N = 7 only


spec = kl.Spec("wrong_at_7", kernel=kernel, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 9, tile=8)})
'''


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    d = tmp_path_factory.mktemp("failing")
    (d / "spec_wrong.py").write_text(FLAKY_SPEC)
    store = OutcomeStore(str(d / "history.sqlite"))
    up = Climber(d, store)
    first, second = up("wrong"), up("wrong")
    store.fresh = True
    fresh = up("wrong")
    store.fresh = False
    after_fresh = up("wrong")
    store.close()
    return first, second, fresh, after_fresh


def test_a_failed_point_always_runs_again_and_passed_ones_are_reused(failing):
    first, second, _, _ = failing
    failed = {o.point.id for o in first[0].outcomes if o.status == Status.FAILED}
    assert failed == {"r1-N=7"}
    assert second[1] == failed                                # ran again: failed again
    assert second[2] == {o.point.id for o in first[0].outcomes} - failed
    assert second[0].exit_code == 1 and second[0].reuse.reused == len(second[2])


def test_fresh_reuses_nothing_and_keeps_its_outcomes(failing):
    _, _, fresh, after = failing
    assert fresh[2] == set() and fresh[1] == {o.point.id for o in fresh[0].outcomes}
    assert fresh[0].reuse.fresh
    assert after[2] == {o.point.id for o in after[0].outcomes} - {"r1-N=7"}
    assert {o.reused.run_id for o in after[0].outcomes if o.reused} == {fresh[0].run_id}


def test_no_early_point_starts_where_the_store_gives_its_outcome(tmp_path, monkeypatch):
    # early points (processes of their own, a profiler) start at the climb's start, before their rung
    # asks the store: the climb asks it first. Rung 1's points stand in for them here (no process).
    from kladder.climbing import ladder
    (tmp_path / "spec_wrong.py").write_text(FLAKY_SPEC)
    ref = str(tmp_path / "spec_wrong.py")
    monkeypatch.setattr(ladder, "early_points", lambda spec, budget, report, runner, opts:
                        list(ladder.rung_points(spec, 1, budget, opts.seed)))
    started, real = [], ladder.Runner.start_early
    monkeypatch.setattr(ladder.Runner, "start_early", lambda self, pts: started.append(list(pts)) or real(self, pts))
    store = OutcomeStore(str(tmp_path / "history.sqlite"))
    reports = []
    for _ in range(2):
        pool = Pool(ref, "cpu", spares=1)
        try:
            reports.append(climb(ref, load_spec(ref), Options(rungs=(1,), device="cpu", store=store, pool=pool, jobs=2)))
        finally:
            pool.close()
    store.close()
    first, second = reports
    assert [p.id for p in started[0]] == [o.point.id for o in first.outcomes]      # cold: every one started early
    assert [p.id for p in started[1]] == ["r1-N=7"]                               # again: only the failure
    assert second.reuse.reused == len(first.outcomes) - 1 and second.reuse.ran == 1


REPEAT_SPEC = '''
import kladder as kl

spec = kl.Spec("twice", kernel=lambda x: x + x, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8, tile=8)})
'''


def test_rung_5_evidence_adds_up_across_climbs_and_its_bound_tightens(tmp_path):
    (tmp_path / "spec_twice.py").write_text(REPEAT_SPEC)
    store = OutcomeStore(str(tmp_path / "history.sqlite"), accumulate=True)
    up = Climber(tmp_path, store)
    reports = [up("twice", rungs=(5,), repeat=30, repeat_s=5.0)[0] for _ in range(3)]
    store.accumulate = False
    plain = up("twice", rungs=(5,), repeat=30, repeat_s=5.0)
    store.close()

    def proved(r):
        return {o.point.id: o.note.facts for o in r.outcomes
                if o.note is not None and o.note.kind in (NoteKind.REPEATS_CLEAN, NoteKind.STREAM_CLEAN)}
    first, second, third = map(proved, reports)
    assert first and set(first) == set(second) == set(third)
    for pid, x in third.items():
        own = [(x.compared if hasattr(x, "compared") else x.judged) for x in (first[pid], second[pid], x)]
        assert first[pid].accumulated is None                  # one climb: its own bound says it
        assert second[pid].accumulated.climbs == 2 and second[pid].accumulated.calls == sum(own[:2])
        assert x.accumulated.climbs == 3 and x.accumulated.calls == sum(own)
        assert x.accumulated.bound < second[pid].accumulated.bound < first[pid].bound
        assert x.accumulated.since == second[pid].accumulated.since
    # without --accumulate the clean points are reused, their evidence shown as kept
    assert set(first) <= plain[2]
    skipped = {o.point.id for o in reports[0].outcomes if o.status == Status.SKIPPED}   # the sanitizers: CUDA only
    assert skipped and skipped <= plain[2]
    kept = {o.point.id: o.note.facts for o in plain[0].outcomes if o.point.id in first}
    assert all(k.accumulated.climbs == 3 for k in kept.values())
    from kladder.report.words import note_text
    text = note_text(next(o.note for o in plain[0].outcomes if o.point.id in first))
    assert "over 3 climbs under the same key" in text and "0 " in text


# ---------------------------------------------------------------------------- the key itself
def test_the_key_is_the_same_in_another_process(tmp_path):
    # no id, no address, no hash order: a climb in a new process must find the old outcomes
    _write(tmp_path, "double", 2, 64, 200, 64, configs=',\n               configs=[{"BLOCK": 64}, {"BLOCK": 128}]')
    code = textwrap.dedent(f'''
        import json, os
        os.environ["TRITON_INTERPRET"] = "1"
        from kladder.core.fingerprint import fingerprint
        from kladder.history.key import climb_key
        from kladder.climbing.ladder import rung_points
        from kladder.gen.load import load_spec
        from kladder.core.sizes import budget_for
        spec = load_spec({str(tmp_path / "spec_double.py")!r})
        k = climb_key(spec, "cpu", fingerprint(None, "cpu"))
        print(json.dumps([k.parts, [k.point(p) for p in rung_points(spec, 1, budget_for("cpu"))]]))
    ''')
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert outs[0] == outs[1] and json.loads(outs[0])[0]["kernel"]


def test_a_kernel_known_only_by_its_address_is_not_keyed_and_nothing_is_reused():
    import kladder as kl
    handle = threading.Lock()                 # opaque state (a C object): nothing but an address to key it by

    def kernel(x):
        with handle:
            return 2 * x
    spec = kl.Spec("opaque", kernel=kernel, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)})
    k = keymod.climb_key(spec, "cpu", {"torch": "x"})
    assert k.why_not and "the kernel" in k.why_not and "cannot be keyed" in k.why_not
    assert k.point(Point("opaque", 1, (("N", 1),))) is None
    from kladder.core.facts import ReuseFacts
    from kladder.report.words import reuse_text
    assert reuse_text(ReuseFacts(points=3, reused=0, ran=3, climbs=[], run_ids=[], fresh=False, accumulate=False,
                                 why_not=k.why_not)).startswith("no point reused: the kernel")


def test_the_cuda_key_waits_for_the_device_it_runs_on():
    import kladder as kl
    spec = kl.Spec("d", kernel=lambda x: 2 * x, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)})
    assert "device" in keymod.climb_key(spec, "cuda", {"torch": "x"}).why_not
    fp = {"torch": "x", "device": {"name": "NVIDIA H100", "capability": "9.0"}}
    other = {"torch": "x", "device": {"name": "NVIDIA H200", "capability": "9.0"}}
    assert keymod.climb_key(spec, "cuda", fp).base != keymod.climb_key(spec, "cuda", other).base


def test_a_kernel_from_a_string_at_import_is_keyed_by_its_code(tmp_path):
    # a Triton kernel made with exec from a string read at import: its code is in the JIT object (its
    # `src` on a GPU, its Python function under the interpreter), not in any file of the closure
    (tmp_path / "made.py").write_text(textwrap.dedent('''
        import triton, triton.language as tl
        import torch
        SRC = open(__file__.replace("made.py", "body.txt")).read()
        scope = {"triton": triton, "tl": tl}
        exec(SRC, scope)
        _k = scope["_k"]
        def kern(x):
            y = torch.empty_like(x)
            _k[(1,)](x, y, x.numel(), BLOCK=64)
            return y
    '''))
    body = ("@triton.jit\ndef _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    i = tl.arange(0, BLOCK)\n"
            "    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * {f}, mask=i < n)\n")
    import importlib
    import kladder as kl
    sys.path.insert(0, str(tmp_path))
    parts = []
    try:
        for f in ("2.0", "3.0"):
            (tmp_path / "body.txt").write_text(body.format(f=f))
            sys.modules.pop("made", None)
            try:
                made = importlib.import_module("made")
            except Exception as e:  # noqa: BLE001 - a Triton without exec'd kernels: nothing to key here
                pytest.skip(f"Triton cannot jit a kernel made with exec here: {e}")
            spec = kl.Spec("made", kernel=made.kern, reference=lambda x: 2 * x,
                           args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
                           dims={"N": kl.Dim(1, 8)})
            parts.append(keymod.climb_key(spec, "cpu", {"torch": "x"}).parts["kernel"])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("made", None)
    assert parts[0] != parts[1]


# ---------------------------------------------------------------------------- the store itself
def _clean(point, calls):
    from kladder.core.facts import RepeatsCleanFacts
    facts = RepeatsCleanFacts(calls=calls + 1, compared=calls, firsts=1, differ=0, wrong=0, deterministic=False,
                              launch="eager", inputs="same", load=False, seconds=0.1, stopped="calls", bound=3 / calls,
                              conf=0.95)
    return Outcome(point, Status.PASSED, note=Note(NoteKind.REPEATS_CLEAN, facts))


def _climb_store(store, spec, run_id):
    return store.climbing("x.py::spec", spec, "cpu", None, run_id, None)


def _tiny_spec():
    import kladder as kl
    return kl.Spec("tiny", kernel=lambda x: 2 * x, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)})


def test_two_climbs_adding_rung_5_calls_to_one_key_at_once_lose_neither(tmp_path):
    # each climb its own connection (as two processes have), writing the same key 25 times at once
    spec, path = _tiny_spec(), str(tmp_path / "h.sqlite")
    point = Point("tiny", 5, (("N", 8),), mode="repeat")
    key = _climb_store(OutcomeStore(path), spec, "run-0")._ensure_key().point(point)
    errors = []

    def add(i):
        store = OutcomeStore(path)
        try:
            c = _climb_store(store, spec, f"run-{i}")
            assert c._ensure_key().point(point) == key
            for _ in range(25):
                c._keep(key, _clean(point, 100))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            store.close()
    threads = [threading.Thread(target=add, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = OutcomeStore(path)
    row = store.h.db.execute("SELECT calls, climbs FROM outcomes WHERE key = ?", (key,)).fetchone()
    store.close()
    assert (row["calls"], row["climbs"]) == (50 * 100, 50)


def test_the_store_is_bounded_least_recently_used_out(tmp_path):
    spec, path = _tiny_spec(), str(tmp_path / "h.sqlite")
    store = OutcomeStore(path, size=3)
    c = _climb_store(store, spec, "run-1")
    points = [Point("tiny", 1, (("N", n),)) for n in range(1, 7)]
    for p in points:
        c._keep(c._ensure_key().point(p), Outcome(p, Status.PASSED))
    # the first two used again (a later climb reused them): the least recently used are 3..6's oldest
    c._touch([c._ensure_key().point(p) for p in points[:2]])
    store.close()
    h = OutcomeStore(path)
    left = {r["point_id"] for r in h.h.db.execute("SELECT point_id FROM outcomes").fetchall()}
    h.close()
    assert left == {"r1-N=1", "r1-N=2", "r1-N=6"}


def test_reused_outcomes_are_marked_in_the_json_the_schema_describes(edits, tmp_path):
    from conftest import report_json
    from kladder.report.jsonout import write_report
    report = edits["again"]["double"][0]
    write_report(str(tmp_path / "r.json"), report)
    doc = report_json(tmp_path / "r.json")
    points = [p for r in doc["rungs"] for p in r["points"]]
    assert points and all(p["reused"]["run_id"] == edits["cold"]["double"][0].run_id for p in points)
    assert doc["reuse"]["reused"] == len(points) and doc["reuse"]["ran"] == 0
    cold = edits["cold"]["double"][0]
    write_report(str(tmp_path / "c.json"), cold)
    assert all(p["reused"] is None for r in report_json(tmp_path / "c.json")["rungs"] for p in r["points"])


def test_the_terminal_says_what_was_reused_and_from_where(edits):
    from kladder.report.terminal import render_text
    report = dataclasses.replace(edits["dims"]["double"][0])
    report.reuse = dataclasses.replace(report.reuse, climbs=[12])
    text = render_text(report)
    n, ran = len(report.outcomes), report.reuse.ran
    assert f"{n - ran} of {n} points reused from climb #12; {ran} run" in text
    kernel = edits["kernel"]["double"][0]
    assert "no point reused: " in render_text(kernel) and "the kernel's code changed" in render_text(kernel)


def test_a_module_the_launcher_imports_only_when_called_is_in_its_code(tmp_path):
    # lib/ops.py's launcher imports lib/fast.py inside itself: not imported when the key is made
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "ops.py").write_text("def twice(x):\n    from lib import fast\n    return fast.scale(x)\n")
    (tmp_path / "lib" / "fast.py").write_text("def scale(x):\n    return 2 * x\n")
    (tmp_path / "spec_lazy.py").write_text(textwrap.dedent('''
        import kladder as kl
        from lib.ops import twice
        spec = kl.Spec("lazy", kernel=twice, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                       returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)})
    '''))
    for m in ("lib", "lib.ops", "lib.fast"):
        sys.modules.pop(m, None)
    try:
        spec = load_spec(str(tmp_path / "spec_lazy.py"))
        assert "lib.fast" not in sys.modules
        before = keymod.climb_key(spec, "cpu", {"torch": "x"}).parts
        (tmp_path / "lib" / "fast.py").write_text("def scale(x):\n    return x + x\n")
        after = keymod.climb_key(spec, "cpu", {"torch": "x"}).parts
    finally:
        for m in ("lib", "lib.ops", "lib.fast"):
            sys.modules.pop(m, None)
    assert before["kernel"] != after["kernel"]
    assert {k: v for k, v in before.items() if k != "kernel"} == {k: v for k, v in after.items() if k != "kernel"}


def test_a_device_others_hold_ends_the_climb_as_without_the_store(tmp_path):
    # on CUDA the key asks a worker which device it runs on: a device that refuses is the climb's
    # start error (ladder.climb reports it), never swallowed into "nothing reused"
    from kladder.run.devicestart import DeviceStartError

    class Pool:
        def free_bytes(self):
            raise DeviceStartError("starting a worker's CUDA context", "out of memory", "0")

    class Runner:
        pool, fingerprint = Pool(), {}
    store = OutcomeStore(str(tmp_path / "h.sqlite"))
    c = store.climbing("x.py::spec", _tiny_spec(), "cuda", Runner(), "run-1", None)
    with pytest.raises(DeviceStartError):
        c.split([Point("tiny", 1, (("N", 1),))], repro=lambda p: "")
    store.close()


def test_what_is_reused_passed_and_skips_the_key_decides_and_nothing_else():
    from kladder.history.outcomes import reusable
    p = Point("tiny", 1, (("N", 1),))
    assert reusable(Outcome(p, Status.PASSED))
    assert reusable(Outcome(p, Status.SKIPPED, note=Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graph")))
    for o in (Outcome(p, Status.FAILED), Outcome(p, Status.FLAKY), Outcome(p, Status.BROKEN),
              Outcome(p, Status.NOT_JUDGED), Outcome(p, Status.OOM),
              Outcome(p, Status.SKIPPED, note=Note.of(NoteKind.NO_DEVICE_MEMORY, need_bytes=2, free_bytes=1)),
              Outcome(p, Status.SKIPPED, note=Note.of(NoteKind.NO_SANITIZER, tool="memcheck", searched=[]))):
        assert not reusable(o), o.status
