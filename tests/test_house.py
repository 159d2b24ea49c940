"""The house rules, checked on the source itself: no import cycle among kladder's modules
(imports inside functions count), no sentence kladder wrote parsed back anywhere in the package,
findings made only where judging or fault classification happens, no module reaching for
another's private name, the judge and the pytest plugin off the environment."""
import ast
import os
import pathlib
import re

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "kladder"


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(mod: str) -> set[str]:
    """Every kladder module `mod` imports, at module level or inside a function."""
    path = MODULES[mod]
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, path.name == "__init__.py", node)
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("kladder") and name != mod:
                out.add(name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def test_no_import_cycle_counting_imports_inside_functions():
    graph = {m: imports_of(m) for m in MODULES}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


ARCHITECTURE = SRC.parent.parent / "docs" / "ARCHITECTURE.md"


def _layer_table(text: str) -> tuple[list[str], dict[str, str]]:
    """docs/ARCHITECTURE.md's layer table: the layers in order (lowest first) and each row's
    entries (a module `ladder.py`, or a folder `run/` covering its modules) -> its layer."""
    section = text[text.index("## Layers"):]
    rows = re.findall(r"^\| (\w+) \| (`.*`) \|$", section, re.M)
    order = [layer for layer, _ in rows]
    entries = {e: layer for layer, cells in rows for e in re.findall(r"`([^`]+)`", cells)}
    return order, entries


def _layer_of(path: str, entries: dict[str, str]) -> str | None:
    """The most specific row covering a module's path (relative to src/kladder)."""
    hits = [e for e in entries if path == e or (e.endswith("/") and path.startswith(e))]
    return entries[max(hits, key=len)] if hits else None


def _upward(graph: dict[str, set[str]], layer: dict[str, str], order: list[str]) -> list[str]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(f"{m} ({layer[m]}) imports {t} ({layer[t]})" for m, targets in graph.items() for t in targets
                  if rank[layer[t]] > rank[layer[m]])


def _module_paths() -> dict[str, str]:
    return {m: p.relative_to(SRC).as_posix() for m, p in MODULES.items()}


def test_no_module_imports_from_a_layer_above_its_own():
    """The layers written once, in docs/ARCHITECTURE.md's table: a module imports only from its
    own layer or those below it (imports inside functions counted)."""
    order, entries = _layer_table(ARCHITECTURE.read_text())
    assert order[0] == "core" and len(order) == len(set(order)) >= 6
    paths = _module_paths()
    layer = {m: _layer_of(p, entries) for m, p in paths.items()}
    uncovered = sorted(paths[m] for m, lay in layer.items() if lay is None)
    assert not uncovered, f"modules in no row of ARCHITECTURE.md's layer table: {uncovered}"
    named = {e for e in entries if any(p == e or (e.endswith("/") and p.startswith(e)) for p in paths.values())}
    assert set(entries) == named, f"rows naming nothing under src/kladder: {sorted(set(entries) - named)}"
    inside = sorted(e for e in entries if "/" in e.rstrip("/"))
    assert not inside, f"rows naming a module inside a folder (a folder is one layer): {inside}"
    assert _upward({m: imports_of(m) for m in MODULES}, layer, order) == []


def test_the_layer_check_finds_an_upward_import():
    order, entries = _layer_table("## Layers\n| layer | modules |\n|---|---|\n| core | `a.py` |\n"
                                  "| run | `run/` `b.py` |\n| tools | `run/debug.py` |\n")
    assert order == ["core", "run", "tools"]
    assert _layer_of("run/x.py", entries) == "run" and _layer_of("run/debug.py", entries) == "tools"
    layer = {"a": "core", "b": "run", "debug": "tools"}
    assert _upward({"a": {"b"}, "b": {"a"}, "debug": {"b"}}, layer, order) == ["a (core) imports b (run)"]
    assert _upward({"b": {"debug"}}, layer, order) == ["b (run) imports debug (tools)"]


def _listed_modules(text: str) -> set[str]:
    """The modules ARCHITECTURE.md's tree names, as paths under src/kladder: a name is read in the
    folder whose block it sits in (a folder line opens a block; lines indented deeper are in it)."""
    tree = text[text.index("```\nsrc/kladder/") + 4:]
    tree = tree[:tree.index("```")]
    stack: list[tuple[int, str]] = []
    listed = set()
    for line in tree.splitlines()[1:]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        first = line.split()[0]
        context = "".join(name for _, name in stack)
        if first.endswith("/"):
            stack.append((indent, first))
            context += first
        for tok in re.findall(r"(?<![\w/.'])([\w/]+\.py)(?!::)", line):
            listed.add(tok if context and tok.startswith(context) else context + tok)
    return listed


# folders the tree describes whole (their modules are the folder's parts): the zoo's kernels, the
# model, the words' family modules
WHOLE = ("zoo/", "model/", "report/words/")


def test_architecture_lists_every_module_and_nothing_that_is_not():
    listed = _listed_modules(ARCHITECTURE.read_text())
    paths = set(_module_paths().values())
    need = {p for p in paths if not p.startswith(WHOLE) and not p.endswith("/__init__.py")}
    assert sorted(need - listed) == [], "modules docs/ARCHITECTURE.md does not list"
    assert sorted(listed - paths) == [], "docs/ARCHITECTURE.md lists modules that do not exist"


def test_the_listing_reads_names_in_their_folders():
    text = "```\nsrc/kladder/\n  a.py   x\n  run/   calls; see b.py\n    c.py  and modes/d.py\n  e.py  run/c.py\n```"
    assert _listed_modules(text) == {"a.py", "run/b.py", "run/c.py", "run/modes/d.py", "e.py"}


def test_renderers_never_parse_english():
    for path in (SRC / "report").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "re" not in imported, path.name
        assert "startswith" not in path.read_text(), path.name


# ---------------------------------------------------------------------------- English parsed back
# Kladder's sentences are made last, from typed data (report/words); nothing reads one back as
# data. Two ways to do that are caught anywhere in src/kladder:
# - a sentence-making function of report/words (one annotated to return a str) whose result is
#   compared (==, !=, in), searched (startswith, partition, ...) or used as a key (d[...]);
# - a comparison or search whose literal operand is an English phrase of two words or more that
#   kladder itself writes elsewhere (a string constant, an f-string's part): "needs a GPU" when a
#   verdict reads "needs a GPU (skipped, ...)". A phrase kladder never writes is another tool's
#   output being read (Python's "Fatal Python error:", compute-sanitizer's lines): that is parsing
#   a foreign format, allowed.
SEARCHES = {"startswith", "endswith", "find", "rfind", "index", "rindex", "count", "partition", "rpartition",
            "split", "rsplit", "removeprefix", "removesuffix"}
_WORD = r"[A-Za-z][A-Za-z'\-]*"
PHRASE = re.compile(rf"\W*{_WORD}(?:[ ,;:()/]+{_WORD})+\W*")
ENGLISH_EXEMPT: set[str] = set()    # none: every file that read a sentence back now reads data


def _phrases(node) -> list[str]:
    """The multi-word English literals in an operand (a string, or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if " " in node.value.strip() and PHRASE.fullmatch(node.value) else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [p for e in node.elts for p in _phrases(e)]
    return []


def _searched(tree) -> list[tuple]:
    """(node, how, [the operands that are searched for or compared with])."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in SEARCHES:
            out.append((n, n.func.attr, [n.func.value], n.args[:1]))
        elif isinstance(n, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for o in n.ops):
            how = "in" if any(isinstance(o, (ast.In, ast.NotIn)) for o in n.ops) else "=="
            out.append((n, how, [n.left, *n.comparators], [n.left, *n.comparators]))
    return out


def _sentence_functions(sources: dict[str, str]) -> set[str]:
    names = set()
    for rel, text in sources.items():
        if rel.startswith(os.path.join("report", "words")):
            names |= {n.name for n in ast.walk(ast.parse(text))
                      if isinstance(n, ast.FunctionDef) and n.returns is not None and "str" in ast.unparse(n.returns)}
    return names


def _written(trees: dict) -> list[str]:
    """Every string constant kladder writes: not a docstring, not a compared or searched-for operand."""
    texts = []
    for tree in trees.values():
        skip = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        for _, _, _, operands in _searched(tree):
            skip |= {id(x) for o in operands for x in ast.walk(o)}
        texts += [n.value for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]
    return texts


def _kladder_wrote(phrase: str, how: str, written: list[str]) -> bool:
    p = phrase.strip()
    if how in ("startswith", "removeprefix"):
        return any(t.lstrip().startswith(p) for t in written)
    if how in ("endswith", "removesuffix"):
        return any(t.rstrip().endswith(p) for t in written)
    if how == "==":
        return any(t.strip() == p for t in written)
    return any(p in t for t in written)


def _made(node, funcs: set[str], imported: set[str]) -> bool:
    """The expression calls one of report/words' sentence functions (words.reason(o), reason(o))."""
    for c in ast.walk(node):
        f = getattr(c, "func", None)
        if isinstance(f, ast.Attribute) and getattr(f.value, "id", None) == "words" and f.attr in funcs:
            return True
        if isinstance(f, ast.Name) and f.id in imported:
            return True
    return False


def english_parsed_back(sources: dict[str, str]) -> list[str]:
    """'file:line: code' for every place a sentence kladder wrote is read back as data."""
    trees = {rel: ast.parse(text) for rel, text in sources.items()}
    funcs, written = _sentence_functions(sources), _written(trees)
    found = []
    for rel, tree in trees.items():
        imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and (n.module or "").rpartition(".")[2] == "words" for a in n.names if a.name in funcs}
        hits = [n for n, how, texts, operands in _searched(tree)
                if any(_made(t, funcs, imported) for t in texts)
                or any(_kladder_wrote(p, how, written) for o in operands for p in _phrases(o))]
        hits += [n for n in ast.walk(tree) if isinstance(n, ast.Subscript) and _made(n.slice, funcs, imported)]
        found += [f"{rel}:{n.lineno}: {ast.unparse(n)}" for n in hits]
    return sorted(set(found))


def _package_sources() -> dict[str, str]:
    return {str(p.relative_to(SRC)): p.read_text() for p in SRC.rglob("*.py")}


def test_no_sentence_kladder_wrote_is_parsed_back_anywhere_in_the_package():
    sources = _package_sources()
    assert _sentence_functions(sources), "the scan must see report/words' sentence functions"
    found = english_parsed_back(sources)
    exempt = [f for f in found if f.split(":")[0] in ENGLISH_EXEMPT]
    assert [f for f in found if f not in exempt] == []
    # an exemption no longer needed goes: this fails once a branch fixes its file and the exemption stays
    assert {f.split(":")[0] for f in exempt} == ENGLISH_EXEMPT


def test_the_english_check_catches_a_verdict_read_back_and_a_grouping_by_a_sentence():
    zoo_run = """
def verdict(caught):
    return "caught" if caught else "needs a GPU (skipped, or a race the CPU cannot run)"
def summary(rows):
    return sum(r[4].startswith("needs a GPU") for r in rows)
"""
    terminal = """
from . import words
def groups(outcomes, by_text):
    for o in outcomes:
        by_text[words.note_text(o.note)].append(o)
    return [o for o in outcomes if "needs a GPU" in words.reason(o)]
"""
    faults = """
def head(stderr_tail):
    return stderr_tail.partition("Fatal Python error:")[0]
"""
    words = """
def reason(o) -> str:
    return f"needs a GPU: {o}"
def note_text(n, sized: bool = True) -> str:
    return str(n)
def note_group(n) -> tuple:
    return (n.kind,)
"""
    found = english_parsed_back({"zoo_run.py": zoo_run, os.path.join("report", "terminal.py"): terminal,
                                 os.path.join("run", "faults.py"): faults, os.path.join("report", "words.py"): words})
    assert {f.split(": ", 1)[1] for f in found} == {
        "'needs a GPU' in words.reason(o)", "by_text[words.note_text(o.note)]", "r[4].startswith('needs a GPU')"}
    assert all(f.startswith(("zoo_run.py:", os.path.join("report", "terminal.py:"))) for f in found)


def _environ_uses(tree) -> list[tuple[int, str]]:
    """(line, how) for every os.environ / os.getenv use: "read" or "write"."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv", "putenv") and getattr(n.value, "id", "") == "os":
            out.append(n)
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    found = []
    for n in out:
        up = parents.get(n)
        write = (isinstance(up, ast.Attribute) and up.attr in ("setdefault", "update", "pop", "clear", "__setitem__")) \
            or n.attr == "putenv" or (isinstance(up, ast.Subscript) and isinstance(up.ctx, (ast.Store, ast.Del)))
        found.append((n.lineno, "write" if write else "read"))
    return sorted(found)


def test_the_judge_reads_no_environment_and_the_pytest_plugin_sets_none():
    # the interpreter flag is decided by the worker (run/interpreter.on, run/trial.py) and passed down
    for path in (SRC / "checks").rglob("*.py"):
        assert _environ_uses(ast.parse(path.read_text())) == [], path.name
    differ = SRC / "run" / "modes" / "differ.py"
    assert _environ_uses(ast.parse(differ.read_text())) == []
    # the plugin runs in the user's pytest process: it leaves that process's environment alone
    plugin = SRC / "pytest_plugin.py"
    assert [u for u in _environ_uses(ast.parse(plugin.read_text())) if u[1] == "write"] == []


def test_the_environment_scan_tells_a_write_from_a_read():
    tree = ast.parse("import os\nos.environ.setdefault('A', '1')\nos.environ['B'] = '2'\nx = os.environ.get('C')\n")
    assert _environ_uses(tree) == [(2, "write"), (3, "write"), (4, "read")]


ALLOWED_FINDINGS = ("checks", "outcome.py", os.path.join("run", "faults.py"))


def test_findings_are_made_only_by_checks_outcome_and_fault_classification():
    makers = []
    for path in SRC.rglob("*.py"):
        rel = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding":
                makers.append(rel)
    assert makers, "the scan must see the checks' findings"
    assert sorted({m for m in makers if not m.startswith(ALLOWED_FINDINGS)}) == []


def test_no_module_imports_another_modules_private_name():
    offenders = []
    for mod, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                offenders += [f"{mod}: {a.name}" for a in node.names if a.name.startswith("_") and a.name != "__version__"]
    assert offenders == []


@pytest.mark.parametrize("name", ["model"])
def test_one_thing_is_called_model(name):
    called = sorted(m for m in MODULES if m.rsplit(".", 1)[-1] == name)
    assert called == ["kladder.model"]


def test_no_dict_typed_facts_in_outcomes_classes():
    """Finding.facts and Note.facts are facts/' dataclasses, never a dict: a misspelt key
    then fails where the facts are made, not when a rare message renders."""
    typed = []
    for node in ast.walk(ast.parse((SRC / "core" / "outcome.py").read_text())):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and getattr(item.target, "id", None) == "facts":
                    typed.append((node.name, ast.unparse(item.annotation)))
    assert sorted(typed) == [("Finding", "Facts"), ("Note", "Facts")]
    from kladder.core.outcome import Check, Finding, Note, NoteKind
    with pytest.raises(TypeError):
        Finding(Check.RAISED, facts={"error": "E", "text": ""})
    with pytest.raises(TypeError):
        Note(NoteKind.INPUTS_OOM, {"text": ""})


def test_every_check_and_note_kind_has_its_facts_and_its_words():
    from kladder.core.facts import CHECK_FACTS, NOTE_FACTS
    from kladder.core.outcome import Check, NoteKind
    from kladder.report.words import MESSAGES, NOTES
    assert list(CHECK_FACTS) == [str(c) for c in Check] and list(NOTE_FACTS) == [str(k) for k in NoteKind]
    classes = [*CHECK_FACTS.values(), *NOTE_FACTS.values()]
    assert len(set(classes)) == len(classes), "one class per kind: the words are chosen by it"
    assert set(CHECK_FACTS.values()) <= set(MESSAGES) and set(NOTE_FACTS.values()) <= set(NOTES)


def test_the_generated_report_schema_is_current():
    """docs/report.schema.json's facts are generated from facts/ (python -m kladder.report.schema)."""
    from kladder.report import schema
    assert schema.main([str(SRC.parent.parent / "docs" / "report.schema.json"), "--check"]) == 0


# ---------------------------------------------------------------------------- a test module beside each module
# A module has logic of its own when it defines at least this many functions (methods counted);
# the zoo's kernels are tested by the zoo's own tests (test_zoo*.py: each buggy kernel caught, each
# twin clean), not module by module.
LOGIC_FUNCTIONS = 3
NOT_UNIT_TESTED = ("kladder.zoo",)
# Modules with functions but no logic a test in-process can reach, each with why (where it is tested).
NO_LOGIC_OF_ITS_OWN = {
    "kladder.run.interpreter_probes": "Triton @jit probe kernels only, run by run/interpreter.probe under the "
                                      "interpreter (tests/test_interpreter.py runs them)",
}


def _test_module_of(mod: str) -> list[pathlib.Path]:
    """Where `mod`'s own test module may be: beside it in tests/unit/ (its folders mirrored,
    test_<name>.py; a package's __init__ is test_<package>.py), or tests/test_<name>.py."""
    tests = SRC.parent.parent / "tests"
    parts = mod.split(".")[1:]
    if not parts:                                          # the package itself
        return [tests / "unit" / "test_kladder.py"]
    folder = parts if MODULES[mod].name == "__init__.py" else parts[:-1]
    return [tests / "unit" / pathlib.Path(*folder) / f"test_{parts[-1]}.py", tests / f"test_{parts[-1]}.py"]


def _with_logic() -> list[str]:
    out = []
    for mod, path in sorted(MODULES.items()):
        if mod.startswith(NOT_UNIT_TESTED) or mod in NO_LOGIC_OF_ITS_OWN:
            continue
        tree = ast.parse(path.read_text())
        if sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(tree)) >= LOGIC_FUNCTIONS:
            out.append(mod)
    return out


def test_every_module_with_logic_of_its_own_has_a_test_module_beside_it():
    missing = [mod for mod in _with_logic() if not any(p.exists() for p in _test_module_of(mod))]
    assert missing == [], ("modules with logic of their own and no test module (tests/unit/<folders>/test_<name>.py): "
                           f"{missing}")


def test_the_test_module_paths_mirror_the_package():
    tests = SRC.parent.parent / "tests"
    assert _test_module_of("kladder.checks.values")[0] == tests / "unit" / "checks" / "test_values.py"
    assert _test_module_of("kladder.report.words")[0] == tests / "unit" / "report" / "words" / "test_words.py"
    assert _test_module_of("kladder")[0] == tests / "unit" / "test_kladder.py"
    assert "kladder.core.spec.validation" in _with_logic() and not any(m.startswith("kladder.zoo") for m in _with_logic())
    assert set(NO_LOGIC_OF_ITS_OWN) <= set(MODULES)          # an exemption names a module that exists
