"""A debugger at the failure (issue 33, item 2): `kladder repro --pdb` stops at the kernel's
exception (post-mortem, in the user's frame) or right after the judgement failed, with the
documented names in scope (pdb fed on stdin); `--save DIR` writes safetensors and a README; a CPU
repro forks its workers from a process that imported torch and the spec once, judges as the
climb does (raised, crashed, hung, flaky), and costs little more than torch's import."""
import json
import os
import resource
import subprocess
import sys
import time

import pytest
from conftest import run_cli

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SPECS = os.path.join(HERE, "specs")
TAIL = os.path.join(SPECS, "crash_and_tail.py")
TAIL_POINT = '{"spec":"crash_and_tail","rung":1,"dims":[["M",3],["N",2]],"dtypes":[["x","float32"]],"seed":7}'
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")])}


def repro(*args, stdin: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return run_cli([sys.executable, "-m", "kladder.tools.cli", "repro", *args, "--no-history"], input=stdin,
                          capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=timeout)


def test_pdb_stops_after_the_judgement_with_the_inputs_outputs_reference_mask_and_finding_in_scope():
    cmds = "\n".join(["p finding.check", "p sorted(inputs)", "p mask['out'].nonzero().tolist()",
                      "p (outputs['out'] - expected['out']).abs().max().item()", "p point.id", "p message.splitlines()[0]",
                      "p torch.finfo(outputs['out'].dtype).bits", "c"]) + "\n"
    p = repro(TAIL, TAIL_POINT, "--device", "cpu", "--pdb", stdin=cmds)
    out = p.stdout
    assert p.returncode == 1, p.stderr[-2000:]
    assert "kladder: stopped after the call was judged: values on `out`" in out
    assert "(Pdb) <Check.VALUES: 'values'>" in out and "['x']" in out
    assert "[[0, 1], [1, 1], [2, 1]]" in out                      # the last column of every row: the kernel's +1
    assert "(Pdb) 1.0" in out and "r1-M=3-N=2-float32" in out and "Mismatched elements: 3 / 6" in out
    assert "(Pdb) 32" in out                                      # torch is in scope too
    assert out.rstrip().splitlines()[-2].startswith("  repro:") and "FAILED r1-M=3-N=2-float32" in out   # `c`: the verdict
    assert out.rstrip().splitlines()[-1].startswith("(run once in this process for --pdb: no replay")


def test_pdb_at_the_kernels_exception_is_a_post_mortem_in_the_users_own_frame():
    point = '{"spec":"in_torch","rung":1,"dims":[["M",3],["N",5]],"dtypes":[["x","float32"]],"seed":1}'
    p = repro(f"{SPECS}/raising.py::in_torch", point, "--device", "cpu", "--pdb", stdin="p x.shape, w.shape\nup\np x.dtype\nc\n")
    out = p.stdout
    assert p.returncode == 1, p.stderr[-2000:]
    assert "kladder: the kernel raised RuntimeError" in out and "specs/raising.py" in out
    assert "raising.py" in out.split("(Pdb)")[0].splitlines()[-2] and "_helper()" in out    # stopped in _helper's frame
    assert "(torch.Size([3, 5]), torch.Size([5]))" in out and "matmul_scale()" in out and "torch.float32" in out
    assert "FAILED r1-M=3-N=5-float32  rung 1, raised" in out


def test_quitting_the_debugger_ends_the_run_with_no_verdict():
    p = repro(TAIL, TAIL_POINT, "--device", "cpu", "--pdb", stdin="q\n")
    assert p.returncode == 1 and "quit in the debugger" in p.stderr and "FAILED" not in p.stdout


def test_save_writes_the_points_tensors_as_safetensors_with_a_readme(tmp_path):
    import torch
    from safetensors.torch import load_file

    import kladder as kl
    p = repro(TAIL, TAIL_POINT, "--device", "cpu", "--save", str(tmp_path / "saved"))
    assert p.returncode == 1, p.stderr[-2000:]
    d = tmp_path / "saved"
    assert sorted(os.listdir(d)) == ["README.md", "expected.safetensors", "inputs.safetensors", "mask.safetensors",
                                     "outputs.safetensors"]                 # no pickle anywhere
    inputs, outputs = load_file(d / "inputs.safetensors"), load_file(d / "outputs.safetensors")
    expected, mask = load_file(d / "expected.safetensors"), load_file(d / "mask.safetensors")
    assert torch.equal(inputs["x"], kl.inputs(TAIL, TAIL_POINT, device="cpu")["x"])     # the bytes the kernel got
    assert expected["out"].dtype == torch.float64 and outputs["out"].dtype == torch.float32
    assert torch.equal(mask["out"], (outputs["out"].double() - expected["out"]).abs() > 0.5)
    assert int(mask["out"].sum()) == 3
    readme = (d / "README.md").read_text()
    for name in ("inputs.safetensors", "outputs.safetensors", "expected.safetensors", "mask.safetensors",
                 "kladder repro", "load_file", "`x` (float32, 3 x 2)"):
        assert name in readme, name


def test_save_refuses_a_file_where_the_folder_goes(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    p = repro(TAIL, TAIL_POINT, "--device", "cpu", "--save", str(f))
    assert p.returncode == 2 and "--save" in p.stderr and "a file is there" in p.stderr


FAULTY = os.path.join(SPECS, "faulty.py")


@pytest.mark.parametrize("n,words", [(3, "the kernel raised RuntimeError: unsupported N"),
                                     (5, "died with SIGSEGV"),
                                     (7, "did not finish within 3 s")])
def test_a_cpu_repro_in_forked_workers_judges_a_raise_a_crash_and_a_hang_as_the_climb_does(n, words):
    p = repro(FAULTY, json.dumps({"spec": "scale", "rung": 1, "dims": [["N", n]], "dtypes": [["x", "float32"]], "seed": 1}),
              "--device", "cpu", "--timeout", "3")
    assert p.returncode == 1 and words in p.stdout, p.stdout + p.stderr[-2000:]


def test_a_cpu_repro_replays_a_failure_on_its_worker_so_a_flaky_one_is_flaky():
    p = repro(os.path.join(SPECS, "flaky.py"), '{"spec":"sometimes","rung":1,"dims":[["N",3]],"seed":1}', "--device", "cpu")
    assert p.returncode == 1 and "FLAKY r1-N=3" in p.stdout and "the replay passed" in p.stdout


def _cpu_s(cmd: list[str], **kw) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and every child it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=ENV, cwd=ROOT, timeout=600, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_a_small_points_repro_costs_at_most_two_cpu_seconds_over_importing_torch():
    # CPU seconds, not wall: this machine is shared (other climbs load it to 10+ on 2 cores, and the
    # wall time then measures the queue); the repro's work is sequential, so on an idle machine its
    # wall time is its CPU time (bench/repro_speed.py measures both). Before the forked workers: a
    # worker started afresh for the run and another for the run alone, 7-9 CPU s over torch's import
    point = '{"spec":"rmsnorm","rung":1,"dims":[["M",1],["N",4095]],"dtypes":[["x","bfloat16"]],"seed":3432004626}'
    torch_s = min(_cpu_s([sys.executable, "-c", "import torch"])[1] for _ in range(2))
    wall, cpu = _cpu_s([sys.executable, "-m", "kladder.tools.cli", "repro", "kladder.zoo.rmsnorm_n_tail::spec", point,
                        "--device", "cpu", "--no-history"])
    assert cpu - torch_s <= 2.0, (cpu, torch_s, wall)


LIGHT = r"""
import os, sys
import torch
env = dict(os.environ)
from kladder.run.settings import deterministic_on
from kladder.run.guarded_alloc import guarding
deterministic_on()
torch.utils.deterministic.fill_uninitialized_memory = True
with guarding("cpu", 4096) as allocated:
    y = torch.empty(3)
assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
assert bool(y.isnan().all()) and len(allocated) == 1                 # served by the mode, NaN-filled
light = "torch._dynamo" not in sys.modules and "torch._inductor.config" not in sys.modules
same_env = dict(os.environ) == env                                     # (Inductor's import sets its cache folder's)
import torch._inductor.config as config                               # imported later: set as it loads
with guarding("cpu", 4096) as allocated:                               # with Dynamo imported: its disable wraps the mode
    torch.empty(2)
compiled = torch.compile(lambda a: a * 2, backend="eager")
with guarding("cpu", 4096):
    z = compiled(torch.ones(4))
print(light, config.deterministic, same_env, len(allocated), z.tolist())
"""


def test_a_cpu_repro_sets_torch_up_as_a_worker_without_importing_dynamo_or_inductor():
    # torch.use_deterministic_algorithms imports Inductor's config, and the guarded dispatch mode's
    # first call torch._dynamo (1.5-1.7 s each on this CPU): the repro's process does neither until
    # something compiles, with the same settings in force, and no environment variable set
    p = subprocess.run([sys.executable, "-c", LIGHT], capture_output=True, text=True, env=ENV, timeout=300)
    assert p.stdout.split() == ["True", "True", "True", "1", "[2.0,", "2.0,", "2.0,", "2.0]"], p.stderr[-3000:]


def test_with_another_thread_running_the_repro_starts_its_worker_afresh_instead_of_forking(monkeypatch):
    # a fork copies only the forking thread: a lock another thread held would never be released in the
    # child (the thread count is stood in for: pytest-xdist's own threads would count here)
    from kladder.run import forked, isolation
    made = []
    monkeypatch.setattr(forked, "ForkedWorker", lambda pool: made.append("fork"))
    monkeypatch.setattr(forked, "Worker", lambda ref, device: made.append("afresh"))
    pool = forked.ForkPool.__new__(forked.ForkPool)
    isolation.Pool.__init__(pool, "x.py", "cpu")
    for threads in (1, 2):
        monkeypatch.setattr(forked.threading, "active_count", lambda n=threads: n)
        pool._start()
    assert made == ["fork", "afresh"]
