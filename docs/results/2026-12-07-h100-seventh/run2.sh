#!/usr/bin/env bash
# Device call 2 of 2026-12-07 (seventh session): issue 32's GPU targets in one call on one host, after call 1
# (run.sh): the CLI's own start (medians of 3), the twin cold / again / edited, the GEMV point, and the five liger
# ops through rungs 1-3, two climbs side by side.
# From the repository root, carrying .whl:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-seventh/run2.sh
source docs/results/2026-12-06-h100-round/common.sh
step light 150 python3 bench/light_climb.py --device cuda --only start,twin,gemv --step-timeout-s 60 \
    --json "$OUT/light.json" --keep /tmp/keep/light
step liger $(( $(left) - 10 )) python3 bench/light_climb.py --device cuda --only liger \
    --liger-ops rope,fused_add_rmsnorm,swiglu,rmsnorm,layernorm --deadline-s $(( $(left) - 20 )) \
    --step-timeout-s 100 --liger-timeout-s 100 --json "$OUT/liger.json" --keep /tmp/keep/liger
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
