"""The README's and the docs pages' examples run as written: every ```python block (a file when its
first line names one, `# name.py`, else a script whose `print(...)  # expected` lines are checked) and
every ```bash line, in order, a page at a time, in one folder holding a copy of the repository's
examples/ (a file block may name a path in it: `# examples/norm/rmsnorm_spec.py`) and a stand-in for a
user's library (mylib). ```text blocks are shown output. The setup commands (`make zoo`, `make test`,
`make install`, `pip install`) are what CI itself runs or installs, so they are the only lines not run
here. Every relative link in README.md and docs/*.md names a file that exists (and a heading there,
with an #anchor)."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# the pages whose blocks run: the README and the docs pages; docs/ARCHITECTURE.md, the house's map,
# draws trees in plain fences and runs nothing
PAGES = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "ARCHITECTURE.md")]
LINKED = [README, *sorted((ROOT / "docs").glob("*.md"))]
SETUP = ("make zoo", "make test", "make install", "pip install")
MYLIB = '''
import torch


def rmsnorm(x, w, eps):
    """A correct launcher, standing in for the user's library."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w).to(x.dtype)
'''


def _name(page: pathlib.Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: pathlib.Path = README) -> list[tuple[str, str]]:
    return re.findall(r"^```(\w+)\n(.*?)^```", page.read_text(), flags=re.S | re.M)


def _commands(code: str) -> list[str]:
    cmds = [line.split("  #")[0].strip() for line in code.splitlines()]
    return [c for c in cmds if c and not c.startswith("#") and not c.startswith(SETUP)]


def _is_file_block(code: str) -> str | None:
    m = re.match(r"# ([\w./]+\.py)\b", code.splitlines()[0])
    return m.group(1) if m else None


def runnable(page: pathlib.Path) -> int:
    """The scripts and command lines of a page that the run below runs."""
    return sum(1 for lang, code in blocks(page) if lang == "python" and not _is_file_block(code)) + \
        sum(len(_commands(code)) for lang, code in blocks(page) if lang == "bash")


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_fence_says_what_it_is(page):
    openers = re.findall(r"^```(\w*)$", page.read_text(), flags=re.M)[::2]     # every other fence opens a block
    assert "" not in openers, f"{_name(page)}: a code block without a language: python, bash or text"
    langs = {lang for lang, _ in blocks(page)}
    assert langs <= {"python", "bash", "text"}, (_name(page), langs)


def test_the_pages_hold_examples_that_run():
    """The moved sections took their examples with them: the README keeps its first spec and climb,
    and the pages together run as many scripts and commands as the one long README did."""
    assert README.read_text().count("```") // 2 >= 4
    assert runnable(README) >= 1 and any(_is_file_block(c) == "examples/norm/rmsnorm_spec.py" for _, c in blocks(README))
    by_page = {_name(p): runnable(p) for p in PAGES}
    assert sum(by_page.values()) >= 7, by_page         # the long README ran 7
    for page in ("docs/spec.md", "docs/ladder.md", "docs/report.md", "docs/cli.md"):
        assert by_page.get(page, 0) >= 1, by_page


def _expected(code: str) -> list[str]:
    """`print(...)  # 108 2   (why)`: the printed line must read `108 2`."""
    out = []
    for line in code.splitlines():
        m = re.match(r"\s*print\(.*\)\s+# (.*)$", line)
        if m:
            out.append(re.split(r"\s{2,}", m.group(1).strip())[0])
    return out


@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=_name)
def test_the_examples_run_as_written(page, tmp_path):
    (tmp_path / "mylib.py").write_text(MYLIB)
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    ran = 0
    for lang, code in blocks(page):
        if lang == "python":
            named = _is_file_block(code)
            if named:
                (tmp_path / named).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / named).write_text(code)
                continue
            p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=600)
            assert p.returncode == 0, code + "\n" + p.stderr[-3000:]
            printed = [line.strip() for line in p.stdout.splitlines() if line.strip()]
            assert printed[-len(_expected(code)):] == _expected(code) if _expected(code) else True, (code, p.stdout)
            ran += 1
        elif lang == "bash":
            for cmd in _commands(code):
                p = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
                assert p.returncode in (0, 1), cmd + "\n" + p.stdout[-2000:] + p.stderr[-3000:]
                assert "Traceback" not in p.stderr, cmd + "\n" + p.stderr[-3000:]
                assert p.stdout.strip(), cmd
                ran += 1
    assert ran == runnable(page) >= 1


def test_the_python_claimed_is_the_one_ci_runs():
    """pyproject's requires-python and the README claim the same lowest Python, and it is the one
    CI runs (one interpreter: a lower claim would be untested). notation.py's enum.StrEnum needs 3.11."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    low = re.fullmatch(r">=(\d+)\.(\d+)", project["requires-python"].split("#")[0].strip())
    assert low, project["requires-python"]
    claimed = tuple(map(int, low.groups()))
    assert f"Python >= {claimed[0]}.{claimed[1]}" in README.read_text()
    assert claimed >= (3, 11), f"enum.StrEnum (notation.py) needs 3.11; the claim says {claimed}"
    if os.environ.get("CI"):           # CI's machine is the lowest claimed Python, so the claim is tested
        assert sys.version_info[:2] == claimed, (sys.version_info[:2], claimed)


def test_the_install_extras_the_readme_names_exist():
    """`pip install -e '.[triton]'` and the other extras the README names are pyproject's."""
    import tomllib
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    text = README.read_text()
    named = set(re.findall(r"pip install -e '\.\[([\w,]+)\]'", text))
    assert named, "the README's install line"
    assert {e for n in named for e in n.split(",")} <= extras, (named, extras)


# ---------------------------------------------------------------------------- links
def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    seen: dict[str, int] = {}
    out = set()
    for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        s = _slug(h)
        out.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return out


def links(page: pathlib.Path) -> list[str]:
    """The targets of the page's markdown links and images, outside code blocks and code spans."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"!?\[[^\]\n]*\]\(([^)\s]+)\)", text)


def _shown(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def broken_links(page: pathlib.Path) -> list[str]:
    bad = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):          # https:, mailto: ...: not a local file
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no {_shown(dest)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {_shown(dest)}")
    return bad


@pytest.mark.parametrize("page", LINKED, ids=_name)
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_the_link_check_sees_a_broken_link(tmp_path):
    (tmp_path / "there.md").write_text("# A heading: `x=` and y\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#a-heading-x-and-y) [img](there.md) [web](https://example.org)\n"
                    "`[in code](nowhere.md)`\n```text\n[in a block](nowhere.md)\n```\n"
                    "[gone](gone.md) ![gone too](pics/gone.png) [no such heading](there.md#b) [self](#a)\n")
    got = [b.split(":")[0] for b in broken_links(page)]
    assert got == ["gone.md", "pics/gone.png", "there.md#b", "#a"], got
