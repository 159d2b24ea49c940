#!/usr/bin/env bash
# Device call of 2026-12-07 (fifth session). Issue 32's twin, every rung, cold <= 20 s: bench/light_climb.py
# --only twin (cold, again, after a one-line edit) on main before this session's change (.oldtree: d78975b)
# and after it (the profiled points on one lane of their own from the climb's start, as many early lanes as
# jobs on a 16-core host, the timeline), and after it with rung 5's repetition points at 1 s (--repeat-s 1),
# in turn, two rounds; torch.profiler's start in a fresh process (profiler_start.py); the CLI's start.
# From the repository root, carrying .whl and .oldtree (`mkdir .oldtree && git archive d78975b src bench |
# tar -x -C .oldtree`):  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-fifth/run.sh
# Everything it wrote is in $OUT/all.tgz (the device tool returns a few files only).
source docs/results/2026-12-06-h100-round/common.sh
HERE=docs/results/2026-12-07-h100-fifth
B="--device cuda --step-timeout-s 60"
step profiler_start 60 python3 $HERE/profiler_start.py
for r in $(seq 1 ${ROUNDS:-2}); do
  step light_old_$r 110 python3 .oldtree/bench/light_climb.py $B --only twin --json "$OUT/light_old_$r.json" --keep /tmp/keep/old_$r
  step light_new_$r 110 python3 bench/light_climb.py $B --only twin --json "$OUT/light_new_$r.json" --keep /tmp/keep/new_$r
  step light_new1s_$r 110 python3 bench/light_climb.py $B --only twin --twin-args "--repeat-s 1" --json "$OUT/light_new1s_$r.json" --keep /tmp/keep/new1s_$r
  [ $r = 1 ] && step light_start 50 python3 bench/light_climb.py $B --only start --json "$OUT/light_start.json"
done
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
