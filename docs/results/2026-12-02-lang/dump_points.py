"""Dump every point (text, JSON, repr, id, to_json) that `kladder points` would list, for the zoo and tests/specs, in one process."""
import sys, json, glob, os
sys.argv = sys.argv
out = open(sys.argv[1], "w")
from kladder.cli import main
from kladder.cases import case_modules, case_ref
from kladder.ladder import parse_rungs, rung_points
from kladder.load import load_spec
from kladder.report.points import points_json, points_text
from kladder.sizes import budget_for
refs = [case_ref(c, f) for c in case_modules() for f in (False, True)]
refs += sorted(glob.glob("/work/wt/lang/tests/specs/*.py"))
import kladder.load as L, re
expanded = []
for ref in refs:
    try:
        L.load_spec(ref); expanded.append(ref)
    except L.LoadError as e:
        m = re.search(r"holds \d+ specs \(([^)]*)\)", str(e))
        expanded += [f"{ref}::{n}" for n in m.group(1).split(", ")] if m else [ref]
for ref in expanded:
    for device in ("cpu", "cuda"):
        try:
            spec = L.load_spec(ref)
        except Exception as e:
            out.write(f"== {ref} {device} LOAD ERROR {type(e).__name__}: {e}\n"); continue
        budget = budget_for(device)
        pts = []
        for r in range(1, 9):
            try:
                pts += list(rung_points(spec, r, budget, 0))
            except Exception as e:
                out.write(f"== {ref} {device} rung {r} ERROR {type(e).__name__}: {e}\n")
        out.write(f"== {ref} {device} {len(pts)}\n")
        out.write(points_text(spec, ref, device, pts))
        out.write(json.dumps(points_json(spec, ref, device, pts), sort_keys=True, default=str) + "\n")
        for p in pts:
            out.write(f"{p.id}\n{p!r}\n{p.to_json()}\n{p.seed}\n")
