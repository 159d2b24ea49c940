#!/usr/bin/env bash
# Device call 3 of this round: call 1's misses again after their fixes (the same machine, warm):
# the rmsnorm twin cold / again / edited (again: the store's key from nvidia-smi, no worker's
# hello), the MoE twin's independence (ownership on both sides), the LayerNorm's near miss (a
# warning); then, with the time left, run2.sh's liger climbs and the CUDA repro (the device was
# refused for a while: one call where two were planned).
# run from the repository root: OUT=DIR bash docs/results/2026-12-06-h100-round/run3.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
step light 170 python3 bench/light_climb.py --device cuda --only start,twin --deadline-s 165 --step-timeout-s 100 \
    --json "$OUT/light.json" --keep /tmp/keep
step shared_gpu 100 python3 bench/shared_gpu.py --json "$OUT/shared_gpu.json"
step layernorm 90 python3 -m kladder.cli climb examples/norm/layernorm_spec.py --rungs 2 --device cuda --no-history \
    --fresh --json "$OUT/layernorm_rung2.json"
step liger $(( $(left) - 75 )) python3 bench/light_climb.py --device cuda --only liger --deadline-s $(( $(left) - 85 )) \
    --step-timeout-s 120 --liger-timeout-s 90 --json "$OUT/liger.json" --keep /tmp/keep
step repro 70 bash -c 'S=examples/addrmsnorm/addrmsnorm_spec.py::tail_skipped
  python3 -m kladder.cli climb $S --rungs 1 --device cuda --no-history --fresh --json /tmp/keep/tail_skipped.json -x -q
  P=$(python3 -c "import json;d=json.load(open(\"/tmp/keep/tail_skipped.json\"));f=[p for r in d[\"rungs\"] for p in r[\"points\"] if p[\"status\"]==\"failed\"];print(f[0][\"repro\"].replace(\"kladder \", \"python3 -m kladder.cli \", 1) if f else \"\")")
  echo "repro: $P"; [ -n "$P" ] && { time eval "$P"; eval "$P --save /tmp/keep/saved"; }; ls -R /tmp/keep/saved 2>/dev/null | head'
tar -C /tmp -czf "$OUT/reports.tgz" keep 2>/dev/null
cat "$OUT/summary.txt"
