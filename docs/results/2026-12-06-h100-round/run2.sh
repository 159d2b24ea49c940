#!/usr/bin/env bash
# Device call 2 of this round (issues 32, 33): five liger-kernel ops through rungs 1-3, two climbs
# side by side (target <= 60 s each); `kladder repro` of a failing point on CUDA (the fix loop's
# traceback; --save); `kladder explore` on CUDA within its budget.
# run from the repository root: OUT=DIR bash docs/results/2026-12-06-h100-round/run2.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
step liger 330 python3 bench/light_climb.py --device cuda --only liger --deadline-s 320 --step-timeout-s 150 \
    --liger-timeout-s 90 --json "$OUT/liger.json" --keep /tmp/keep
step repro 100 bash -c 'S=examples/addrmsnorm/addrmsnorm_spec.py::tail_skipped
  python3 -m kladder.cli climb $S --rungs 1 --device cuda --no-history --fresh --json /tmp/keep/tail_skipped.json -x -q
  P=$(python3 -c "import json;d=json.load(open(\"/tmp/keep/tail_skipped.json\"));f=[p for r in d[\"rungs\"] for p in r[\"points\"] if p[\"status\"]==\"failed\"];print(f[0][\"repro\"].replace(\"kladder \", \"python3 -m kladder.cli \", 1) if f else \"\")")
  echo "repro: $P"; [ -n "$P" ] && { time eval "$P"; eval "$P --save /tmp/keep/saved"; }; ls -R /tmp/keep/saved 2>/dev/null | head'
step explore 100 python3 -m kladder.cli explore tests/specs/rmsnorm_f16acc.py::fixed --device cuda --budget-s 60 --seed 5 \
    --json "$OUT/explore.json"
tar -C /tmp -czf "$OUT/reports.tgz" keep 2>/dev/null
cat "$OUT/summary.txt"
