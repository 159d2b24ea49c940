#!/usr/bin/env bash
# Device call 2 of 2026-12-07 (sixth session), after call 1 (run.sh) showed two liger climbs side by side
# each leave workers holding 16-28 GiB of cached device memory idle (each one's big point then out of
# memory, waiting the whole minute for the other's, not judged) and RoPE's first failure waiting 18.5 s
# for a fresh worker's start: with each worker's cache released between points and one worker kept in
# reserve, (1) where single points' time goes on CUDA (bench/point_profile.py: RoPE's small points whose
# checks took 0.35 s beside a 0.014 s kernel, its 2 GiB point, the fused add-RMSNorm's 0.5 GiB point);
# (2) the five liger ops, rungs 1-3, two side by side, RoPE and the fused add-RMSNorm first; (3) one round
# of the twin (no regression from the reserve).
# From the repository root, carrying .whl:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-sixth/run2.sh
source docs/results/2026-12-06-h100-round/common.sh
step profile 120 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_sixth.json --rounds 3 \
    --top 45 --json "$OUT/profile.json"
step liger $(( $(left) - 75 )) python3 bench/light_climb.py --device cuda --only liger \
    --liger-ops ${LIGER_OPS:-rope,fused_add_rmsnorm,swiglu,rmsnorm,layernorm} --deadline-s $(( $(left) - 85 )) \
    --step-timeout-s 150 --liger-timeout-s ${LIGER_TIMEOUT_S:-100} --json "$OUT/liger.json" --keep /tmp/keep/liger
step light_new 70 python3 bench/light_climb.py --device cuda --step-timeout-s 60 --only twin --json "$OUT/light_new.json" \
    --keep /tmp/keep/new
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
