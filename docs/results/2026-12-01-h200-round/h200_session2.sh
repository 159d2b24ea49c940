#!/usr/bin/env bash
# The GPU runs of the round that merged rungs 5-7 and the trust work, in two calls of the device
# tool (10 minutes each at most; the results come back as at most 8 files):
#   PART=1  docs/results/2026-12-01-h200-round/h200_trust.sh (issue 15: memory, overhead, the interpreter's kernels, the 2^31
#           cliff of rows_int32_offset, false alarms of correct torch ops, 80 s of them), then
#           speed (issue 11: the landed tree's default climb of the rmsnorm twin against this
#           tree's, side by side, the same rungs 1-4,8)
#   PART=2  docs/results/2026-12-01-h200-round/h200_rung5.sh (issue 12), docs/results/2026-12-01-h200-round/h200_rung7.sh (issue 13, no tests), and
#           docs/results/2026-12-01-h200-round/h200x2_rung6.sh's one-GPU part (issue 14)
# Run from the repository root with $OUT set. BASE: a copy of the landed src (.bench/base/src).
set -u
OUT=${OUT:-/tmp/kladder-results}; BASE=${BASE:-.bench/base/src}
W=/tmp/kladder-work; rm -rf "$W"; mkdir -p "$W"
export PYTHONUNBUFFERED=1
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
pack() { tar czf "$OUT/$1.tgz" -C "$W" "$1"; }
if [ "${PART:-1}" = 3 ]; then
  # the two trust steps that did not finish in PART=1: memory (its bench kernel fixed), and the
  # false alarm that killed the bench at rung 3, found point by point with synchronous launches
  mkdir -p "$W/trust3"; export PYTHONPATH=$PWD/src
  timeout 120 python3 bench/memory.py --json "$W/trust3/memory.json" > "$W/trust3/memory.txt" 2>&1
  echo "memory exit=$?" >> "$OUT/summary.txt"; tail -5 "$W/trust3/memory.txt" >> "$OUT/summary.txt"
  CUDA_LAUNCH_BLOCKING=1 timeout 150 python3 bench/false_alarms.py --device cuda --rungs 3 --seeds 0 --budget-s 120 \
    --trace --json "$W/trust3/fa_rung3.json" > "$W/trust3/fa_rung3.txt" 2>&1
  echo "false_alarms rung 3 exit=$?" >> "$OUT/summary.txt"
  last=$(grep "^run " "$W/trust3/fa_rung3.txt" | tail -1); echo "last point: $last" >> "$OUT/summary.txt"
  grep -E "Error|points of" "$W/trust3/fa_rung3.txt" | tail -3 >> "$OUT/summary.txt"
  name=$(echo "$last" | cut -d' ' -f2)
  if [ -n "$name" ]; then   # the same spec's rung 3 as a user climbs it: a worker per point
    timeout 120 python3 -m kladder.cli climb "tests/specs/torch_ops.py::$name" --rungs 3 --device cuda \
      --json "$W/trust3/climb_$name.json" --log "$W/trust3/climb_$name.jsonl" > "$W/trust3/climb_$name.txt" 2>&1
    echo "climb $name rung 3 exit=$?" >> "$OUT/summary.txt"; tail -3 "$W/trust3/climb_$name.txt" >> "$OUT/summary.txt"
  fi
  timeout 110 python3 bench/false_alarms.py --device cuda --rungs 1,2,4 --seeds 0,1 --budget-s 90 \
    --json "$W/trust3/fa_124.json" > "$W/trust3/fa_124.txt" 2>&1
  echo "false_alarms rungs 1,2,4 exit=$?" >> "$OUT/summary.txt"; grep "points of" "$W/trust3/fa_124.txt" >> "$OUT/summary.txt"
  pack trust3
elif [ "${PART:-1}" = 1 ]; then
  mkdir -p "$W/trust"
  OUT=$W/trust FA_BUDGET_S=80 timeout 340 bash docs/results/2026-12-01-h200-round/h200_trust.sh > "$W/trust/run.txt" 2>&1
  tail -30 "$W/trust/run.txt" >> "$OUT/summary.txt"
  pack trust
  mkdir -p "$W/speed"
  climb() {  # label, src, extra args
    local label=$1 src=$2; shift 2
    local s=$(date +%s.%N)
    PYTHONPATH=$src timeout 150 python3 -m kladder.cli zoo climb rmsnorm_n_tail --fixed --device cuda "$@" \
      --json "$W/speed/$label.json" --log "$W/speed/$label.jsonl" > "$W/speed/$label.txt" 2>&1
    local rc=$? e=$(date +%s.%N)
    echo "$label exit=$rc wall=$(python3 -c "print(round($e-$s,1))")s $(python3 -c "
import json; d = json.load(open('$W/speed/$label.json'))
print(' '.join(f\"r{r['rung']}={r['seconds']:.1f}s/{len(r['points'])}pts\" for r in d['rungs'] if r['climbed']))" 2>&1)" | tee -a "$OUT/summary.txt"
  }
  # Triton's disk cache warmed for both trees (each compiles once), then side by side
  PYTHONPATH=src timeout 120 python3 -m kladder.cli zoo climb rmsnorm_n_tail --fixed --device cuda --rungs 1 --quiet \
    --log /tmp/w.jsonl > "$W/speed/warm.txt" 2>&1
  climb base "$BASE"
  climb new src --rungs 1-4,8 --quiet
  pack speed
else
  mkdir -p "$W/rung5" "$W/rung7" "$W/rung6"
  OUT=$W/rung5 timeout 330 bash docs/results/2026-12-01-h200-round/h200_rung5.sh > "$W/rung5/run.txt" 2>&1
  { echo "== rung 5"; head -40 "$W/rung5/summary.txt"; } >> "$OUT/summary.txt"
  pack rung5
  OUT=$W/rung7 TESTS=0 CLIMB_S=150 timeout 170 bash docs/results/2026-12-01-h200-round/h200_rung7.sh > "$W/rung7/run.txt" 2>&1
  { echo "== rung 7"; cat "$W/rung7/summary.txt"; } >> "$OUT/summary.txt"
  pack rung7
  OUT=$W/rung6 PART=one SECONDS_BUDGET=60 CLIMB_S=60 timeout 100 bash docs/results/2026-12-01-h200-round/h200x2_rung6.sh > "$W/rung6/run.txt" 2>&1
  { echo "== rung 6 (one GPU)"; cat "$W/rung6/summary.txt"; } >> "$OUT/summary.txt"
  pack rung6
fi
cat "$OUT/summary.txt"
