"""Run one spec's rung-5 points of the chosen modes through ladder.Runner, as `kladder climb
--rungs 5` runs them (docs/results/2026-12-01-h200-round/h200_rung5.sh: the zoo cases' repetition points without their four
sanitizer runs, which the planted kernels exercise). Writes NAME.json (the outcomes, as the
climb's JSON writes them) and NAME.txt (each outcome as `kladder repro` prints it), and prints
one line a point: status, calls, rate and interval, or the bound a clean run proves.

usage: python bench/rung5_points.py REF OUTDIR NAME [MODES] [REPEAT_S]"""
import json
import os
import sys

from kladder.climbing.ladder import Runner
from kladder.gen.load import load_spec
from kladder.report.jsonout import outcome_dict
from kladder.report.terminal import render_outcome
from kladder.core.rungs import BY_NUMBER
from kladder.core.sizes import budget_for


def line(o) -> str:
    f = o.headline or (o.warnings[0] if o.warnings else None)
    facts = f.facts.to_dict() if f is not None else {}
    x = facts if "compared" in facts else (o.note.facts.to_dict() if o.note is not None else {})
    if "compared" not in x:
        return f"{o.point.id}: {o.status}" + (f" ({f.check})" if f is not None else "")
    k = x["differ"] if x.get("bitwise") or (f is not None and f.check == "nondeterministic") else x["wrong"]
    rate = f"rate {x['rate']:.3g} (95% CI {x['lo']:.3g}..{x['hi']:.3g})" if k else f"p < {x['bound']:.3g} at 95%"
    speed = f"{x['calls_s']:,.0f} calls/s"
    return (f"{o.point.id}: {o.status}{' ' + str(f.check) if f is not None else ''}; {k:,} of {x['compared']:,} calls; "
            f"{rate}; {x['launch']}{' (fallback)' if x.get('fallback') else ''}; {speed}")


def main(ref, outdir, name, modes="repeat", repeat_s=None):
    spec = load_spec(ref)
    points = [p for p in BY_NUMBER[5].points(spec, budget_for("cuda"), repeat_s=repeat_s) if p.mode in modes.split(",")]
    runner = Runner(ref, spec, "cuda")
    outcomes = []
    try:
        for p in points:
            o = runner.run(p)
            outcomes.append(o)
            print(f"{name}: {line(o)}", flush=True)
    finally:
        runner.close()
    with open(os.path.join(outdir, f"{name}.json"), "w") as f:
        json.dump([outcome_dict(o) for o in outcomes], f, indent=1, allow_nan=False)
    with open(os.path.join(outdir, f"{name}.txt"), "w") as f:
        f.write("".join(render_outcome(o, width=160) for o in outcomes))


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], a[2], a[3] if len(a) > 3 else "repeat", float(a[4]) if len(a) > 4 else None)
