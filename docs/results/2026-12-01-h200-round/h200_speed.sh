#!/usr/bin/env bash
# Speed on the GPU (issue 11), side by side in one run: the default climb of the zoo's rmsnorm
# twin (every built rung) with the landed code of 2026-11-30 (BASE, a copy of its src/) and
# with this tree, alternating, ROUNDS times; each climb's wall time and its rungs' times from
# its JSON. Then the overhead benchmark. Run from the repository root on the GPU machine with
# $OUT set; BASE=path/to/old/src (default .bench/base/src).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}; BASE=${BASE:-.bench/base/src}; ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT/speed"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
climb() {  # label, src, extra args
  local label=$1 src=$2; shift 2
  local s=$(date +%s.%N)
  PYTHONPATH=$src python3 -m kladder.cli zoo climb rmsnorm_n_tail --fixed --device cuda "$@" \
    --json "$OUT/speed/$label.json" --log "$OUT/speed/$label.jsonl" > "$OUT/speed/$label.txt" 2>&1
  local rc=$? e=$(date +%s.%N)
  echo "$label exit=$rc wall=$(python3 -c "print(round($e-$s,1))")s $(python3 -c "
import json; d = json.load(open('$OUT/speed/$label.json'))
print(' '.join(f\"r{r['rung']}={r['seconds']:.1f}s/{len(r['points'])}pts\" for r in d['rungs'] if r['climbed']))" 2>&1)" | tee -a "$OUT/summary.txt"
}
# warm Triton's disk cache for both trees (compiles once), then alternate
PYTHONPATH=src python3 -m kladder.cli zoo climb rmsnorm_n_tail --fixed --device cuda --rungs 1 --quiet --log /tmp/w.jsonl > /dev/null 2>&1
for r in $(seq 1 "$ROUNDS"); do
  climb "base-$r" "$BASE"
  climb "new-$r" src --quiet
done
PYTHONPATH=src python3 bench/overhead.py --device cuda --rounds 30 --json "$OUT/bench_overhead.json" | tee "$OUT/bench_overhead.txt"
tar czf "$OUT/speed.tgz" -C "$OUT" speed && rm -rf "$OUT/speed"
