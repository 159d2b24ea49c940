"""The README's examples run as written: every ```python block (a file when its first line
names one, `# name.py`, else a script whose `print(...)  # expected` lines are checked) and
every ```bash line, in order, in one folder holding a copy of the repository's examples/ (a file block
may name a path in it: `# examples/norm/rmsnorm_spec.py`) and a stand-in for a user's library (mylib).
```text blocks are shown output. The two setup commands (`make zoo`, `make test`) are what CI
itself runs, so they are the only lines not run here."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
SETUP = ("make zoo", "make test")
MYLIB = '''
import torch


def rmsnorm(x, w, eps):
    """A correct launcher, standing in for the user's library."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w).to(x.dtype)
'''


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"^```(\w+)\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_every_fence_says_what_it_is():
    openers = re.findall(r"^```(\w*)$", README.read_text(), flags=re.M)[::2]     # every other fence opens a block
    assert "" not in openers, "a code block without a language: python, bash or text"
    langs = {lang for lang, _ in blocks()}
    assert langs <= {"python", "bash", "text"}, langs
    assert sum(lang in ("python", "bash") for lang, _ in blocks()) >= 6


def _expected(code: str) -> list[str]:
    """`print(...)  # 108 2   (why)`: the printed line must read `108 2`."""
    out = []
    for line in code.splitlines():
        m = re.match(r"\s*print\(.*\)\s+# (.*)$", line)
        if m:
            out.append(re.split(r"\s{2,}", m.group(1).strip())[0])
    return out


def test_the_readme_examples_run_as_written(tmp_path):
    (tmp_path / "mylib.py").write_text(MYLIB)
    shutil.copytree(README.parent / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    ran = 0
    for lang, code in blocks():
        if lang == "python":
            first = code.splitlines()[0]
            m = re.match(r"# ([\w./]+\.py)\b", first)
            if m:
                (tmp_path / m.group(1)).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / m.group(1)).write_text(code)
                continue
            p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=600)
            assert p.returncode == 0, code + "\n" + p.stderr[-3000:]
            printed = [line.strip() for line in p.stdout.splitlines() if line.strip()]
            assert printed[-len(_expected(code)):] == _expected(code) if _expected(code) else True, (code, p.stdout)
            ran += 1
        elif lang == "bash":
            for line in code.splitlines():
                cmd = line.split("  #")[0].strip()
                if not cmd or cmd.startswith("#") or cmd.startswith(SETUP):
                    continue
                p = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
                assert p.returncode in (0, 1), cmd + "\n" + p.stdout[-2000:] + p.stderr[-3000:]
                assert "Traceback" not in p.stderr, cmd + "\n" + p.stderr[-3000:]
                assert p.stdout.strip(), cmd
                ran += 1
    assert ran >= 5


def test_the_python_claimed_is_the_one_ci_runs():
    """pyproject's requires-python and the README claim the same lowest Python, and it is the one
    CI runs (one interpreter: a lower claim would be untested). notation.py's enum.StrEnum needs 3.11."""
    import tomllib
    project = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]
    low = re.fullmatch(r">=(\d+)\.(\d+)", project["requires-python"].split("#")[0].strip())
    assert low, project["requires-python"]
    claimed = tuple(map(int, low.groups()))
    assert f"Python >= {claimed[0]}.{claimed[1]}" in README.read_text()
    assert claimed >= (3, 11), f"enum.StrEnum (notation.py) needs 3.11; the claim says {claimed}"
    if os.environ.get("CI"):           # CI's machine is the lowest claimed Python, so the claim is tested
        assert sys.version_info[:2] == claimed, (sys.version_info[:2], claimed)
