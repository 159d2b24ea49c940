"""The house rules, checked on the source itself: no import cycle among kladder's modules
(imports inside functions count), renderers that never parse English, findings made only
where judging or fault classification happens, no module reaching for another's private name."""
import ast
import os
import pathlib

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


def test_renderers_never_parse_english():
    for path in (SRC / "report").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "re" not in imported, path.name
        assert "startswith" not in path.read_text(), path.name


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
    """Finding.facts and Note.facts are facts.py's dataclasses, never a dict: a misspelt key
    then fails where the facts are made, not when a rare message renders."""
    typed = []
    for node in ast.walk(ast.parse((SRC / "outcome.py").read_text())):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and getattr(item.target, "id", None) == "facts":
                    typed.append((node.name, ast.unparse(item.annotation)))
    assert sorted(typed) == [("Finding", "Facts"), ("Note", "Facts")]
    from kladder.outcome import Check, Finding, Note, NoteKind
    with pytest.raises(TypeError):
        Finding(Check.RAISED, facts={"error": "E", "text": ""})
    with pytest.raises(TypeError):
        Note(NoteKind.INPUTS_OOM, {"text": ""})


def test_every_check_and_note_kind_has_its_facts_and_its_words():
    from kladder.facts import CHECK_FACTS, NOTE_FACTS
    from kladder.outcome import Check, NoteKind
    from kladder.report.words import MESSAGES, NOTES
    assert list(CHECK_FACTS) == [str(c) for c in Check] and list(NOTE_FACTS) == [str(k) for k in NoteKind]
    classes = [*CHECK_FACTS.values(), *NOTE_FACTS.values()]
    assert len(set(classes)) == len(classes), "one class per kind: the words are chosen by it"
    assert set(CHECK_FACTS.values()) <= set(MESSAGES) and set(NOTE_FACTS.values()) <= set(NOTES)


def test_the_generated_report_schema_is_current():
    """docs/report.schema.json's facts are generated from facts.py (python -m kladder.report.schema)."""
    from kladder.report import schema
    assert schema.main([str(SRC.parent.parent / "docs" / "report.schema.json"), "--check"]) == 0
