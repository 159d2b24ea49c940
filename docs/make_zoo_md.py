"""Regenerate docs/zoo.md from the zoo's CASE records: `python docs/make_zoo_md.py`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.tools.cases import case_modules  # noqa: E402

HEAD = """# The zoo

Each case is a buggy kernel and its fixed twin, written as a kernel library writes them,
with the spec its author would write without knowing the bug (`src/kladder/zoo/CASE.py`).
Climb one with `kladder zoo climb CASE [--fixed] [--rungs N] --device cpu|cuda`. This page is made from
each module's `CASE` record (`python docs/make_zoo_md.py`).
"""


def main() -> None:
    parts = [HEAD]
    for name, mod in case_modules().items():
        c = mod.CASE
        parts.append(f"## `{name}`\n\n- gap: {c['gap']}; expected rung: {c['rung']}; needs: {c['needs']}\n"
                     f"- mirrors: {c['mirrors']}\n\n{c['story']}\n")
    with open(os.path.join(os.path.dirname(__file__), "zoo.md"), "w") as f:
        f.write("\n".join(parts))


main()
