#!/usr/bin/env bash
# Device call of 2026-12-07 (second session), cut to the device time the refusals left: run2.sh's four
# climbs (issue 34: the two GPU-only zoo cases whose specs moved to parts, buggy and fixed), then the
# rmsnorm twin's cold climb, every rung (issue 32: <= 20 s), with its slowest points from the JSON.
# run from the repository root: OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-round/run3.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
K="python3 -m kladder"
step atomic_buggy 60 $K zoo climb atomic_order --device cuda --rungs 5 --no-history --json "$OUT/atomic_buggy.json"
step atomic_fixed 60 $K zoo climb atomic_order --fixed --device cuda --rungs 5 --no-history --json "$OUT/atomic_fixed.json"
step splitk_buggy 45 $K zoo climb splitk_semaphore_graph --device cuda --rungs 4 --no-history --json "$OUT/splitk_buggy.json"
step splitk_fixed 45 $K zoo climb splitk_semaphore_graph --fixed --device cuda --rungs 4 --no-history --json "$OUT/splitk_fixed.json"
export TRITON_CACHE_DIR=/tmp/tc-cold TORCHINDUCTOR_CACHE_DIR=/tmp/ic-cold KLADDER_HISTORY=/tmp/h-cold.db
rm -rf /tmp/tc-cold /tmp/ic-cold /tmp/h-cold.db
step twin_cold 100 $K climb src/kladder/zoo/rmsnorm_n_tail.py::fixed --device cuda --fresh --json "$OUT/twin_cold.json"
python3 - "$OUT" > "$OUT/seconds.txt" 2>&1 <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/twin_*.json")):
    d = json.load(open(f)); print("==", os.path.basename(f), "seconds", d.get("seconds"))
    for r in d.get("rungs", []):
        pts = r.get("points", [])
        secs = sorted(((p.get("seconds") or 0), (p.get("id") or "")[:90] + " " + str(p.get("stages"))[:120]) for p in pts)
        print(f"  rung {r.get('rung')} {r.get('seconds')} s, {len(pts)} points, point seconds sum {sum(s for s,_ in secs):.1f}")
        for s, p in secs[-3:]: print(f"     {s:.2f} {p}")
PY
cat "$OUT/seconds.txt" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
