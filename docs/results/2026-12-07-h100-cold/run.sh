#!/usr/bin/env bash
# Device call of 2026-12-07 (fourth session). Issue 32's twin, every rung, cold <= 20 s: bench/light_climb.py
# --only twin (cold, again, after a one-line edit) on the tree before this session's change (.oldtree: main
# at 94f382d) and after it, alternating, two rounds each; issue 34's four GPU climbs
# (../2026-12-07-h100-round/climbs.sh); the CLI's start (--only start); liger's RoPE, rungs 1-3, if time is left.
# From the repository root, carrying .whl and .oldtree (made by `mkdir .oldtree && git archive 94f382d src
# bench | tar -x -C .oldtree`):  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-cold/run.sh
source docs/results/2026-12-06-h100-round/common.sh
B="--device cuda --step-timeout-s 60"
for r in 1 2; do
  for t in old new; do
    root=$([ $t = old ] && echo .oldtree || echo .)
    step light_${t}_$r 130 python3 $root/bench/light_climb.py $B --only twin --json "$OUT/light_${t}_$r.json" --keep /tmp/keep/${t}_$r
  done
done
source docs/results/2026-12-07-h100-round/climbs.sh
step light_start 60 python3 bench/light_climb.py $B --only start --json "$OUT/light_start.json"
step liger_rope 100 python3 bench/light_climb.py $B --only liger --liger-ops rope --liger-timeout-s 90 --json "$OUT/liger_rope.json" --keep /tmp/keep/rope
for d in /tmp/keep/*_1; do echo "== seconds $d"; python3 docs/results/2026-12-07-h100-round/seconds.py "$d"; done >> "$OUT/summary.txt" 2>&1
tar -C /tmp -czf "$OUT/reports.tgz" keep
cat "$OUT/summary.txt"
