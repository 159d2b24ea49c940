"""python3 seconds.py OUT: each twin_*.json climb under OUT, rung by rung: its seconds, its points' summed
seconds and its slowest four points with their stages (run1.sh and run3.sh append it to summary.txt)."""
import glob
import json
import os
import sys

for f in sorted(glob.glob(sys.argv[1] + "/twin_*.json")):
    with open(f) as fh:
        d = json.load(fh)
    print("==", os.path.basename(f), "seconds", d.get("seconds"))
    for r in d.get("rungs", []):
        pts = r.get("points", [])
        secs = sorted(((p.get("seconds") or 0), (p.get("id") or "")[:90] + " " + str(p.get("stages"))[:120]) for p in pts)
        print(f"  rung {r.get('rung')} {r.get('seconds')} s, {len(pts)} points, point seconds sum {sum(s for s, _ in secs):.1f}")
        for s, p in secs[-4:]:
            print(f"     {s:.2f} {p}")
