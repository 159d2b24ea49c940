"""Version specifiers for rung 7's toolchain conditions (`Expect(when={"torch": ">=2.6"})`):
packaging's SpecifierSet where packaging is importable (torch depends on it), else a small
reading of the same syntax (>=, <=, >, <, ==, !=, ~=, joined by commas) over the release
numbers. A pre-release or a local build ("2.6.0a0+git1234", "2.5.1+cu124") counts as its
release: a nightly of 2.6 is torch >= 2.6 as far as a kernel's dispatch is concerned."""
from __future__ import annotations

import re

def installed(package: str) -> str | None:
    """An installed package's version, from its metadata (nothing imported); None when absent."""
    import importlib.metadata
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


OPS = ("~=", "==", "!=", ">=", "<=", ">", "<")


def parse_specifier(text: str):
    """The specifier `text` as an object `holds` takes; a ValueError saying why it is none."""
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:
        return _parse(text)
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        raise ValueError(f"{text!r} is not a version specifier") from None
    if not len(spec):
        raise ValueError(f"{text!r} holds no comparison")
    return spec


def release(version: str) -> str | None:
    """'2.6.0a0+git1234' -> '2.6.0', '12.4' -> '12.4'; None when no number leads it."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(version))
    return m.group(1) if m else None


def holds(text: str, version: str | None) -> bool:
    """Whether `version` satisfies the specifier `text`; an absent version satisfies nothing."""
    have = release(version) if version is not None else None
    if have is None:
        return False
    spec = parse_specifier(text)
    if isinstance(spec, list):
        return all(_compare(op, have, want) for op, want in spec)
    return spec.contains(have, prereleases=True)


def _parse(text: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(","):
        part = part.strip()
        op = next((o for o in OPS if part.startswith(o)), None)
        want = release(part[len(op):]) if op else None
        if op is None or want is None or part[len(op):].strip() != want:
            raise ValueError(f"{text!r} is not a version specifier")
        out.append((op, want))
    if not out:
        raise ValueError(f"{text!r} holds no comparison")
    return out


def _nums(v: str) -> tuple[int, ...]:
    t = tuple(int(x) for x in v.split("."))
    while len(t) > 1 and t[-1] == 0:
        t = t[:-1]
    return t


def _compare(op: str, have: str, want: str) -> bool:
    a, b = _nums(have), _nums(want)
    if op == "~=":
        raw = tuple(int(x) for x in want.split("."))
        prefix = raw[:-1] if len(raw) > 1 else raw
        full = tuple(int(x) for x in have.split(".")) + (0,) * len(prefix)
        return a >= b and full[:len(prefix)] == prefix
    return {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b}[op]
