#!/usr/bin/env bash
# Device call 3 of 2026-12-07 (seventh session), sized for the device time left: RoPE's 2 GiB point alone, after
# call 1 (run.sh), on the tree that hashes a row past a slab a slab of words at a time (e184930) and names a row
# selection's keys in one place (b8c5525): the point's input hash (q, 2 GiB: 16 rows of 128 MiB), its sampled
# rows and its backward's reference copies all run there.
# From the repository root, carrying .whl:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-seventh/run3.sh
source docs/results/2026-12-06-h100-round/common.sh
step profile_big 60 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_rope_big.json --warm 0 \
    --rounds 2 --top 40 --json "$OUT/profile_big.json"
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
