"""examples/: each example climbed through the CLI, as examples/README.md says to climb it, on its
cheapest rungs that show it works (a correct kernel: every point passes at the defaults), and the
points each spec's comments promise are among those it ran. Also: the README's spec is the
example's file, every command examples/README.md gives names a file that exists, and the
examples import nothing but torch, triton and kladder."""
import ast
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import report_json, run_cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def climb(spec: str, rungs: str, tmp_path) -> dict:
    """`kladder climb SPEC --rungs R --device cpu`, from the repository root as the examples'
    README gives it; the report read back (and checked against the schema)."""
    out = tmp_path / "report.json"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", spec, "--rungs", rungs, "--device", "cpu",
                        "--json", str(out), "--log", str(tmp_path / "log.jsonl"), "--quiet", "--no-history"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])})
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-3000:]
    report = report_json(out)
    for r in report["rungs"]:
        if r["rung"] in wanted(rungs):
            assert r["climbed"] and r["verdict"] == "passed", r
            assert r["counts"]["passed"] > 0 and r["counts"]["passed"] == len(r["points"]), r["counts"]
    return report


def wanted(rungs: str) -> set[int]:
    return {int(r) for r in rungs.split(",")}


def ids(report: dict, rung: int) -> list[str]:
    return [p["id"] for r in report["rungs"] if r["rung"] == rung for p in r["points"]]


def test_norm_passes_rungs_1_and_2_at_the_edges_its_tile_names(tmp_path):
    report = climb("examples/norm/rmsnorm_spec.py", "1,2", tmp_path)
    ns = {int(m) for i in ids(report, 1) for m in re.findall(r"-N=(\d+)-", i)}
    # tile=16: 15, 16, 17, 3 x 16 + 1; the top of the range with a tail (8191, 8192 - 16 + 1); each width +-1
    assert {1, 15, 16, 17, 49, 8177, 8191, 8192, 2879, 2880, 2881, 4095, 4097, 7167, 7169} <= ns, sorted(ns)
    assert any("-bfloat16" in i for i in ids(report, 1)) and any("-float16" in i for i in ids(report, 1))
    assert len(ids(report, 2)) > 0


def test_tiled_add_passes_rung_1_with_every_config_at_tails_of_its_tiles(tmp_path):
    report = climb("examples/tiled/add2d_spec.py", "1", tmp_path)
    points = [p["point"] for r in report["rungs"] if r["rung"] == 1 for p in r["points"]]
    configs = {tuple(map(tuple, p["config"])) for p in points}
    assert configs == {(), (("BLOCK_M", 16), ("BLOCK_N", 64)), (("BLOCK_M", 32), ("BLOCK_N", 64)),
                       (("BLOCK_M", 64), ("BLOCK_N", 16))}, configs            # () = the launcher's own default
    ms = {dict(p["dims"])["M"] for p in points}
    assert {15, 17, 31, 33, 63, 65, 193, 961, 1023} <= ms, sorted(ms)          # a tail of every BLOCK_M
    # every config meets a partial last tile of the blocks it runs with
    for cfg in configs - {()}:
        bm, bn = dict(cfg)["BLOCK_M"], dict(cfg)["BLOCK_N"]
        assert any(tuple(map(tuple, p["config"])) == cfg and dict(p["dims"])["M"] % bm and dict(p["dims"])["N"] % bn
                   for p in points), cfg


def test_routing_passes_rungs_1_and_2_with_every_id_kind_and_only_its_sizes(tmp_path):
    report = climb("examples/routing/expert_counts_spec.py", "1,2", tmp_path)
    points = [p["point"] for r in report["rungs"] for p in r["points"]]
    assert {dict(p["dims"])["E"] for p in points} == {8, 16, 64}               # kl.Dim(sizes=[8, 16, 64]), every rung
    assert {dict(p["dims"])["K"] for p in points} <= {1, 2, 8}
    kinds = {v for p in points for _, v in p.get("values", [])}
    assert {"ids/same", "ids/distinct", "ids/ends", "ids/unused", "ids/sorted", "ids/reversed"} <= kinds, kinds


def _readme_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.S | re.M)


def test_the_readmes_spec_is_the_norm_examples_file():
    spec = (EXAMPLES / "norm" / "rmsnorm_spec.py").read_text()
    assert spec in _readme_blocks(), "README.md's 'Describe a kernel' block must be examples/norm/rmsnorm_spec.py as it is"
    assert "mylib" not in spec


def test_every_command_in_the_examples_readme_names_a_file_that_exists():
    text = (EXAMPLES / "README.md").read_text()
    paths = set(re.findall(r"\b(examples/[\w/]+\.py)\b", text))
    assert len(paths) >= 3
    for p in paths:
        assert (ROOT / p).is_file(), p
    for case in re.findall(r"kladder zoo climb ([a-z]\w*)", text):
        assert (ROOT / "src" / "kladder" / "zoo" / f"{case}.py").is_file(), case


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix() for p in EXAMPLES.glob("*/*.py")
                                        if p.parent.name != "stateful"))
def test_examples_need_no_package_of_their_own(path):
    """A newcomer runs them as they are: imports of torch, triton, kladder, the standard library and
    the example's own modules beside it (a test file: pytest too), nothing else."""
    tree = ast.parse((ROOT / path).read_text())
    here = {p.stem for p in (ROOT / path).parent.glob("*.py")} | set(sys.stdlib_module_names)
    if os.path.basename(path).startswith("test_"):
        here.add("pytest")
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) else []
        for n in names:
            assert n.split(".")[0] in {"torch", "triton", "kladder"} | here, (path, n)


# examples/addrmsnorm: a newcomer's fused add + RMSNorm and its three bugs (issue 33; TRANSCRIPT.md there
# climbs each through rungs 1-3). Here each bug's catching point, taken from the points the climb runs
# (`kladder points`), is re-run with `kladder repro` (a fork of one process: seconds, not a climb), and
# the fixed kernel passes its own point of the same id.
ADDRMS = "examples/addrmsnorm/addrmsnorm_spec.py"
CAUGHT = {"store_mask": (1, "r1-M=1-N=1-bfloat16", "guard:    510 guard bytes after the end of `y` were overwritten"),
          "tail_skipped": (1, "r1-M=1-N=257-bfloat16", "pattern:  the last column (N % 256 = 1) of every row"),
          "fp16_sumsq": (2, "r2-M=17-N=513-bfloat16-x:huge", "kernel 0 vs reference")}


def _kladder(*args) -> subprocess.CompletedProcess:
    return run_cli([sys.executable, "-m", "kladder.tools.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])})


def _climbs_point(ref: str, rung: int, pid: str, tmp_path) -> str:
    out = tmp_path / f"points-{rung}.json"
    assert _kladder("points", ref, "--rungs", str(rung), "--device", "cpu", "--json", str(out)).returncode == 0
    return json.dumps(next(p["point"] for p in json.loads(out.read_text())["points"] if p["id"] == pid))


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_addrmsnorm_each_bug_is_caught_on_the_cpu_and_the_fixed_kernel_passes_the_same_point(name, tmp_path):
    rung, pid, words = CAUGHT[name]
    bug = _kladder("repro", f"{ADDRMS}::{name}", _climbs_point(f"{ADDRMS}::{name}", rung, pid, tmp_path),
                   "--device", "cpu", "--no-history")
    assert bug.returncode == 1 and words in bug.stdout, bug.stdout + bug.stderr[-2000:]
    fixed = _kladder("repro", f"{ADDRMS}::spec", _climbs_point(f"{ADDRMS}::spec", rung, pid, tmp_path),
                     "--device", "cpu", "--no-history")
    assert fixed.returncode == 0 and f"PASSED {pid}" in fixed.stdout, fixed.stdout + fixed.stderr[-2000:]
