#!/usr/bin/env bash
# Device call of 2026-12-07 (sixth session). Issue 32's last targets on one machine, in one call:
# (1) the twin, every rung (bench/light_climb.py --only twin: cold, again, after a one-line edit), main before
# the fifth session (.oldtree: d78975b) and main now, in turn, ROUNDS rounds: the early fork server and the
# cache key first were never measured on a GPU; (2) the five liger-kernel ops, rungs 1-3, two climbs side by
# side, RoPE first, each with its timeline (RoPE was cut at 90 s on 2026-12-06).
# From the repository root, carrying .whl and .oldtree (`mkdir .oldtree && git archive d78975b src bench |
# tar -x -C .oldtree`):  OUT=DIR LIMIT=S ROUNDS=N bash docs/results/2026-12-07-h100-sixth/run.sh
# Everything it wrote is in $OUT/all.tgz (the device tool returns a few files only).
source docs/results/2026-12-06-h100-round/common.sh
B="--device cuda --step-timeout-s 60"
for r in $(seq 1 ${ROUNDS:-2}); do
  step light_old_$r 110 python3 .oldtree/bench/light_climb.py $B --only twin --json "$OUT/light_old_$r.json" --keep /tmp/keep/old_$r
  step light_new_$r 110 python3 bench/light_climb.py $B --only twin --json "$OUT/light_new_$r.json" --keep /tmp/keep/new_$r
  [ $r = 1 ] && step light_start 50 python3 bench/light_climb.py $B --only start --json "$OUT/light_start.json"
done
step liger $(( $(left) - 15 )) python3 bench/light_climb.py --device cuda --only liger \
    --liger-ops ${LIGER_OPS:-rope,fused_add_rmsnorm,rmsnorm,layernorm,swiglu} --deadline-s $(( $(left) - 25 )) \
    --step-timeout-s 150 --liger-timeout-s ${LIGER_TIMEOUT_S:-150} --json "$OUT/liger.json" --keep /tmp/keep/liger
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
