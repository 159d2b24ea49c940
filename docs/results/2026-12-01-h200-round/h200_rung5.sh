#!/usr/bin/env bash
# Rung 5 on the GPU (issue 12), about 4-5 minutes on one H200. Run from the repository root on the
# GPU machine with $OUT set to a folder for the results (compute-sanitizer on PATH or in
# /usr/local/cuda/bin). Every step has its own timeout and writes what it has; summary.txt has
# one line a step, in the order they finished.
#  1. throughput (alone on the GPU): kladder's repetition against the bare graph replay of the
#     same 64K-float Triton kernel in the same process, and a naive loop (goal: >= 0.5x bare)
#  2. missing_fence's raw stale-read rate by shape (alone): rows and calls wrong, with intervals
#  3. in parallel: every rung-5 repetition point of missing_fence, atomic_order and sampled_timing,
#     buggy and twin (5 s a point); the four sanitizer points of missing_fence (racecheck cannot see
#     a global-memory handshake); kladder's sanitizer on the planted overrun, race, divergent
#     barrier and uninitialised read and on their twins, the tools' own logs kept; memcheck on the
#     overrun with the caching allocator left on, for the contrast
#  4. the CUDA tests of tests/test_rung5.py and tests/test_zoo_rung5_kernels.py
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
OUT=${OUT:-/tmp/kladder-rung5}
mkdir -p "$OUT/points" "$OUT/sanitize/logs"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  "$SAN" --version 2>&1 | tail -2; } > "$OUT/env.txt" 2>&1

step() {  # name, timeout in s, then the command; its output to $OUT/NAME.log
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$OUT/summary.txt"
}
san() {  # name, spec ref, point, tool: kladder's sanitize mode on one point
  KLADDER_SANITIZER_LOGS=$OUT/sanitize/logs step "sanitize/$1" 280 \
    python3 -m kladder.cli repro "$2" "$3" --sanitize "$4" --device cuda
}
OVERRUN='{"spec":"silu_and_mul","rung":5,"dims":[["M",3],["N",2881]],"dtypes":[["gate","bfloat16"]]}'
BLOCKS='{"spec":"shift_race","rung":5,"dims":[["N",1000]]}'
BARRIER='{"spec":"half_barrier","rung":5,"dims":[["N",1000]]}'
SHARE='{"spec":"abs_share","rung":5,"dims":[["M",4],["N",100]]}'

step throughput 120 python3 bench/repeat_throughput.py "$OUT/throughput.json" 5
step fence_rates 120 python3 bench/missing_fence_rates.py "$OUT/fence_rates.json" 3

for c in missing_fence atomic_order sampled_timing; do
  for k in spec fixed; do
    step "points/$c.$k" 240 python3 bench/rung5_points.py "kladder.zoo.$c::$k" "$OUT/points" "$c.$k" repeat 5 &
  done
done
KLADDER_SANITIZER_LOGS=$OUT/sanitize/logs step points/missing_fence.sanitize 280 \
  python3 bench/rung5_points.py kladder.zoo.missing_fence::spec "$OUT/points" missing_fence.sanitize sanitize &
san overrun kladder.zoo.small_overrun::spec "$OVERRUN" memcheck &
san overrun_fixed kladder.zoo.small_overrun::fixed "$OVERRUN" memcheck &
san race bench/planted.py::race "$BLOCKS" racecheck &
san race_fixed bench/planted.py::race_fixed "$BLOCKS" racecheck &
wait
san half_barrier bench/planted.py::half_barrier "$BARRIER" synccheck &
san half_barrier_fixed bench/planted.py::half_barrier_fixed "$BARRIER" synccheck &
san uninit bench/planted.py::uninit "$SHARE" initcheck &
san uninit_fixed bench/planted.py::uninit_fixed "$SHARE" initcheck &
# the contrast: the same overrun under memcheck with the caching allocator on (the tool sees nothing)
step sanitize/overrun_cached 280 "$SAN" --tool memcheck --log-file "$OUT/sanitize/logs/overrun-cached.log" \
  python3 -m kladder.run.modes.sanitize kladder.zoo.small_overrun::spec cuda "$OVERRUN" &
wait

step gpu_tests 200 python3 -m pytest -q -p no:cacheprovider tests/test_rung5.py tests/test_zoo_rung5_kernels.py \
  -k "not cpu_case"
tail -3 "$OUT/gpu_tests.log" >> "$OUT/summary.txt"
{ echo; cat "$OUT"/points/*.log 2>/dev/null; echo; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/sanitize/logs/*.log \
  2>/dev/null; for f in "$OUT"/sanitize/*.log; do echo "== $(basename "$f")"; head -12 "$f"; done; } >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
