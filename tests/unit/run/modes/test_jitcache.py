"""run/modes/jitcache.py without starting a process: the environment a child gets, how a
child's kernel error travels (stderr, exit 3) and is rebuilt, what each exit means, a process's
files read back (cache directory, kept outputs), a child's outputs put where the checks read
them, what the mode yields for the results, and the child's own function run in this process."""
import json
import os
import subprocess
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import save_file

import kladder as kl
from kladder.core.outcome import Cause, KernelError, NoteKind, Skip, SpecBroken
from kladder.core.point import Point
from kladder.run.forkclient import Children
from kladder.run.harness import Harness
from kladder.run.modes import jitcache
from kladder.run.modes.base import Call, Measured, Same


def test_an_environment_with_a_flag_over_it_and_none_unsetting():
    base = {"A": "1", "B": "2"}
    assert jitcache.with_env(base, {"B": "3", "C": "4", "A": None, "Z": None}) == {"B": "3", "C": "4"}
    assert base == {"A": "1", "B": "2"}


# ---------------------------------------------------------------------------- a child's kernel error
def test_a_childs_kernel_error_is_said_as_data_and_rebuilt_with_its_name_and_text(capsys):
    code = jitcache.child_raised(KernelError(IndexError("index 7 is out of bounds\nsecond line"), "call"))
    err = capsys.readouterr().err
    assert code == 3 and err.startswith("the kernel raised IndexError: index 7")
    rebuilt = jitcache._raised("warming up\n" + err)
    assert type(rebuilt).__name__ == "IndexError" and isinstance(rebuilt, RuntimeError)
    assert str(rebuilt) == "index 7 is out of bounds\nsecond line"


def test_a_child_that_said_nothing_as_data_is_its_last_line_or_its_exit():
    assert str(jitcache._raised("a\nSegfault in the launcher\n")) == "Segfault in the launcher"
    assert type(jitcache._raised("")) is RuntimeError and str(jitcache._raised("  \n")) == "exited 3"


def test_the_last_data_line_wins():
    lines = [jitcache.RAISED + json.dumps({"error": e, "text": t}) for e, t in (("KeyError", "a"), ("OSError", "b"))]
    assert type(jitcache._raised("\n".join(lines))).__name__ == "OSError"


@pytest.mark.parametrize("result, raised, says", [
    (subprocess.CompletedProcess([], 0, "", ""), None, None),
    (subprocess.CompletedProcess([], 3, "", jitcache.RAISED + '{"error": "ValueError", "text": "bad"}'), KernelError, "bad"),
    (subprocess.CompletedProcess([], 1, "", "Traceback\nModuleNotFoundError: x\n"), SpecBroken, "ModuleNotFoundError: x"),
    (subprocess.CompletedProcess([], -11, "", ""), SpecBroken, "exited -11"),
    (subprocess.TimeoutExpired("cmd", 9.0), KernelError, "the process did not finish within 9 s"),
])
def test_what_each_exit_of_a_child_means(monkeypatch, result, raised, says):
    def fake(cmd, env, timeout, children):
        if isinstance(result, Exception):
            raise result
        return result
    monkeypatch.setattr("kladder.run.forkclient.run", fake)
    if raised is None:
        jitcache.run_child(["x"], {}, 9.0, "the warm process", "warm", Children())
        return
    with pytest.raises(raised) as e:
        jitcache.run_child(["x"], {}, 9.0, "the warm process", "warm", Children())
    if raised is KernelError:
        assert e.value.label == "the warm process" and str(e.value.error) == says
    else:
        assert e.value.note.kind == NoteKind.PROCESS_FAILED and e.value.note.facts.to_dict() == {"label": "warm", "text": says}


def test_outside_a_climb_the_children_have_no_spec_to_load():
    h = SimpleNamespace(children=Children(), point=SimpleNamespace(mode="jitcache"))
    with pytest.raises(Skip) as e:
        jitcache.run_processes(h, [])
    assert e.value.note.kind == NoteKind.OUTSIDE_CLIMB


def test_a_process_runs_on_its_cache_with_its_environment_and_its_kept_outputs_come_back(monkeypatch, tmp_path):
    seen = {}

    def fake_child(cmd, env, timeout, where, label, children):
        seen.update(cmd=cmd, env=env, where=where)
        out = cmd[5]
        for var in jitcache.CACHE_VARS:                       # what a compiler leaves in its cache
            os.makedirs(env[var], exist_ok=True)
            open(os.path.join(env[var], "k.bin"), "w").close()
        save_file({"out": torch.ones(2), f"1{jitcache.SEP}out": torch.zeros(2)}, out)
        with open(out + ".json", "w") as f:
            json.dump([{"name": "k"}], f)

    monkeypatch.setattr(jitcache, "run_child", fake_child)
    monkeypatch.setenv("MYLIB_FAST", "1")
    h = SimpleNamespace(device="cpu", children=Children("s.py::spec"))
    proc = jitcache.Process("warm cache: A twice", [Point("s", 4, (("N", 2),))], cache="shared",
                            env={"MYLIB_FAST": None, "MYLIB_MODE": "x"}, keep=2)
    r = jitcache._run_process(h, "s.py::spec", str(tmp_path), 1, proc, 5.0, None)
    assert seen["cmd"][3:7] == ["s.py::spec", "cpu", str(tmp_path / "1.safetensors"), "--keep=2"]
    assert json.loads(seen["cmd"][7])["dims"] == [["N", 2]] and seen["where"] == "process with a warm cache: A twice"
    env = seen["env"]
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "shared" / "triton_cache_dir")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "shared" / "torchinductor_cache_dir")
    assert "MYLIB_FAST" not in env and env["MYLIB_MODE"] == "x" and env["TRITON_INTERPRET"] == "1"
    assert r.outputs["out"].tolist() == [1.0, 1.0] and [list(m) for m in r.more] == [["out"]]
    assert r.more[0]["out"].tolist() == [0.0, 0.0] and r.files == 2 and r.launches == [{"name": "k"}]


# ---------------------------------------------------------------------------- outputs put back
def _spec(kernel=torch.neg, out=False, grads=None):
    args = {"x": kl.Tensor("N", dtype="float32")}
    if out:
        args["o"] = kl.Out("N", like="x")
    extra = {"grads": grads} if grads else {}
    return kl.Spec("neg", kernel=kernel, reference=torch.neg, args=args, dims={"N": kl.Dim(1, 16)},
                   returns=None if out else kl.Tensor("N", like="x"), **extra)


def test_a_childs_outputs_go_into_the_out_buffers_the_return_and_the_gradients():
    h = Harness(_spec(lambda x, o: torch.neg(x, out=o), out=True), Point("neg", 4, (("N", 3),)), "cpu")
    prep = h.prepare()
    assert jitcache.returned_from(h, prep, {"o": torch.tensor([1.0, 2.0, 3.0])}) is None
    assert prep.inputs.outs["o"].tolist() == [1.0, 2.0, 3.0]

    h = Harness(_spec(), Point("neg", 4, (("N", 3),)), "cpu")
    prep = h.prepare()
    assert jitcache.returned_from(h, prep, {"out": torch.ones(3)}).tolist() == [1.0, 1.0, 1.0]
    assert jitcache.returned_from(h, prep, {}) is None              # the child returned nothing: the contract says so

    h = Harness(_spec(grads=["x"]), Point("neg", 4, (("N", 3),), mode="jitcache"), "cpu")
    prep = h.prepare()
    jitcache.returned_from(h, prep, {"out": torch.ones(3), "grad of x": torch.full((3,), -1.0)})
    assert prep.backward.grads["grad of x"].tolist() == [-1.0, -1.0, -1.0]
    jitcache.returned_from(h, prep, {"out": torch.ones(3)})
    assert prep.backward.grads == {"grad of x": None}


# ---------------------------------------------------------------------------- the mode, on results
def _observe(monkeypatch, cold_out, warm_out, warm_again, deterministic=False):
    def fake(h, processes):
        assert [p.label for p in processes] == ["cold cache: A then B", "warm cache: A twice"]
        assert [p.keep for p in processes] == [1, 2] and processes[1].points[0] == processes[1].points[1]
        assert [pt.sizes["N"] for pt in processes[0].points] == [3, 6]
        return [jitcache.Result(cold_out, [], 4), jitcache.Result(warm_out, [], 4, [warm_again])]
    monkeypatch.setattr(jitcache, "run_processes", fake)
    spec = kl.Spec("neg", kernel=torch.neg, reference=torch.neg, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 16)}, returns=kl.Tensor("N", like="x"),
                   repetition=kl.Repetition(deterministic=deterministic))
    point = Point("neg", 4, (("N", 3),), mode="jitcache", partner=(("dims", (("N", 6),)),))
    return list(jitcache.MODE.observe(Harness(spec, point, "cpu")))


def test_the_warm_a_is_held_to_the_cold_a_and_the_cache_files_noted(monkeypatch):
    a = {"out": torch.tensor([1.0, 2.0, 3.0])}
    seen = _observe(monkeypatch, a, {"out": a["out"] + 1}, {"out": a["out"] + 1})
    assert [type(o) for o in seen] == [Same, Call, Measured]
    same, call, files = seen
    assert same.cause == Cause.JITCACHE and same.call == "A in a process on the warm cache"
    assert same.before["out"].tolist() == [1.0, 2.0, 3.0] and same.after["out"].tolist() == [2.0, 3.0, 4.0]
    assert call.returned.tolist() == [2.0, 3.0, 4.0]
    assert files.note.kind == NoteKind.CACHE_FILES and files.note.facts.files == 4


def test_a_warm_a_that_varies_is_judged_against_the_reference_with_the_cold_a(monkeypatch):
    a = {"out": torch.tensor([1.0, 2.0, 3.0])}
    seen = _observe(monkeypatch, a, a, {"out": torch.tensor([1.0, 2.0, 3.5])})
    assert [type(o) for o in seen] == [Measured, Same, Call, Call]
    assert seen[0].note.kind == NoteKind.RUN_TO_RUN and seen[0].note.facts.files == 4
    assert seen[1].before == {}                                      # nothing left to hold bit for bit
    assert seen[3].label == "A in the process on the cold cache"


def test_a_deterministic_spec_fails_the_warm_processs_variation(monkeypatch):
    a = {"out": torch.tensor([1.0, 2.0, 3.0])}
    seen = _observe(monkeypatch, a, a, {"out": torch.tensor([1.0, 2.0, 3.5])}, deterministic=True)
    assert seen[0].cause == Cause.RUN_TO_RUN and seen[0].call == "A twice on the warm cache"


# ---------------------------------------------------------------------------- the child, in this process
SPEC_FILE = '''
import torch
import kladder as kl

def no_luck(x):
    raise ValueError("no luck")

args = {"x": kl.Tensor("N", dtype="float32")}
spec = kl.Spec("neg", kernel=torch.neg, reference=torch.neg, args=args, dims={"N": kl.Dim(1, 16)},
               returns=kl.Tensor("N", like="x"))
raises = kl.Spec("neg_raises", kernel=no_luck, reference=torch.neg, args=args, dims={"N": kl.Dim(1, 16)},
                 returns=kl.Tensor("N", like="x"))
'''


def test_the_child_saves_the_kept_points_outputs_and_the_first_ones_launches(tmp_path, monkeypatch):
    import torch.utils.deterministic as det
    monkeypatch.setattr(det, "fill_uninitialized_memory", det.fill_uninitialized_memory)   # the child sets it
    (tmp_path / "s.py").write_text(SPEC_FILE)
    out = str(tmp_path / "o.safetensors")
    a, b = Point("neg", 4, (("N", 3),), seed=5), Point("neg", 4, (("N", 4),), seed=6)
    assert jitcache.child([f"{tmp_path}/s.py::spec", "cpu", out, "--keep=2", a.to_json(), b.to_json(), a.to_json()]) == 0
    saved = jitcache._load(out)
    assert set(saved) == {"out", "1|out"} and saved["out"].shape == (3,) and saved["1|out"].shape == (4,)
    with open(out + ".json") as f:
        assert json.load(f) == []                                    # torch.neg launches no Triton kernel


def test_the_child_exits_3_when_the_kernel_raises(tmp_path, capsys):
    (tmp_path / "s.py").write_text(SPEC_FILE)
    code = jitcache.child([f"{tmp_path}/s.py::raises", "cpu", str(tmp_path / "o"), Point("neg_raises", 4, (("N", 3),)).to_json()])
    assert code == 3 and str(jitcache._raised(capsys.readouterr().err)) == "no luck"
