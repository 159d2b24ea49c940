#!/usr/bin/env bash
# The GPU runs of session 3 (issues 12 and 15), one device call a part; results under $OUT.
#   PART=1  measurements: rung 5's throughput (the post graph against op by op, against bare
#           replay), the split-row reductions' stale rates (bench/fence_variants.py), the sdpa
#           near-tie, the false-alarm suite at rungs 1, 2, 4 (seeds 0, 1) after the peer's new cap
#           and tail, and the rung-5 CUDA tests in one process
#   PART=2  after the fixes: throughput (the post graph, said whether it was captured), the
#           fence variants with missing_fence's new kernel, missing_fence and its twin climbed at
#           rung 5 as a user climbs them, the false-alarm suite with torch's known defects re-run
#           with their twins, and the rung-5 CUDA tests in one process
#   PART=3  the record (packed in part3.tgz: the device tool brings back 8 files): throughput, the
#           fence variants, atomic_order and its twin climbed at rung 5 with the post graph,
#           synccheck on the planted divergent barrier (now divergent within each warp) and its
#           twin, and the rung-5 CUDA tests in one process
#   PART=4  (part4.tgz) the false-alarm suite at rung 3 (seed 0; sdpa climbed as a user climbs it,
#           a worker a point: torch's SDPA faults the device on a query one element into its
#           storage), and rung 8's zoo cases and twins on CUDA after the teacher-forced run's reuse
#   PART=5  (part5.tgz) after the review: the rung-5 CUDA tests, throughput, the fence variants (the
#           bench's two row-major kernels made one), missing_fence climbed at rung 5
set -u
OUT=${OUT:-/tmp/kladder-results}
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
step() {  # name, timeout in s, then the command; its output to $OUT/NAME.txt
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$OUT/summary.txt"
  tail -${TAILN:-8} "$OUT/$name.txt" >> "$OUT/summary.txt"
}
if [ "${PART:-1}" = 1 ]; then
  step throughput 90 python3 bench/repeat_throughput.py "$OUT/throughput.json" 2 3
  TAILN=20 step fence_variants 80 python3 bench/fence_variants.py "$OUT/fence_variants.json" 1.5
  step sdpa_tie 40 python3 bench/sdpa_tie.py
  TAILN=12 step false_alarms_124 230 python3 bench/false_alarms.py --device cuda --rungs 1,2,4 --seeds 0,1 --budget-s 180 \
    --json "$OUT/false_alarms_124.json" &
  TAILN=30 step rung5_tests 230 python3 -m pytest -q -p no:cacheprovider -p no:randomly tests/test_rung5.py \
    tests/test_zoo_rung5_kernels.py -k "not missing_fence_leader" &
  wait
elif [ "${PART}" = 2 ]; then
  step throughput 100 python3 bench/repeat_throughput.py "$OUT/throughput.json" 2 3
  TAILN=30 step fence_variants 100 python3 bench/fence_variants.py "$OUT/fence_variants.json" 1.2
  TAILN=20 step climb_missing_fence 200 python3 -m kladder.cli zoo climb missing_fence --rungs 5 --device cuda \
    --json "$OUT/climb_missing_fence.json" --log "$OUT/climb_missing_fence.jsonl" &
  TAILN=20 step climb_missing_fence_fixed 200 python3 -m kladder.cli zoo climb missing_fence --fixed --rungs 5 --device cuda \
    --json "$OUT/climb_missing_fence_fixed.json" --log "$OUT/climb_missing_fence_fixed.jsonl" &
  wait
  TAILN=25 step false_alarms_124 230 python3 bench/false_alarms.py --device cuda --rungs 1,2,4 --seeds 0,1 --budget-s 180 \
    --json "$OUT/false_alarms_124.json" &
  TAILN=30 step rung5_tests 230 python3 -m pytest -q -p no:cacheprovider tests/test_rung5.py \
    tests/test_zoo_rung5_kernels.py &
  wait
elif [ "${PART}" = 3 ]; then
  W=/tmp/part3; rm -rf "$W"; mkdir -p "$W"; ROOT=$OUT; OUT=$W
  step throughput 100 python3 bench/repeat_throughput.py "$OUT/throughput.json" 2 3
  TAILN=30 step fence_variants 100 python3 bench/fence_variants.py "$OUT/fence_variants.json" 1.2
  for k in "" "--fixed"; do
    TAILN=12 step "climb_atomic_order$k" 200 python3 -m kladder.cli zoo climb atomic_order $k --rungs 5 --device cuda \
      --json "$OUT/climb_atomic_order$k.json" --log "$OUT/climb_atomic_order$k.jsonl" &
  done
  BARRIER='{"spec":"half_barrier","rung":5,"dims":[["N",1000]]}'
  for k in half_barrier half_barrier_fixed; do
    TAILN=6 step "synccheck_$k" 90 python3 -m kladder.cli repro "bench/planted.py::$k" "$BARRIER" --sanitize synccheck \
      --device cuda &
  done
  wait
  TAILN=12 step rung5_tests 230 python3 -m pytest -q -p no:cacheprovider tests/test_rung5.py tests/test_zoo_rung5_kernels.py
  cp "$OUT/summary.txt" "$ROOT/summary.txt"
  tar czf "$ROOT/part3.tgz" -C /tmp part3
  OUT=$ROOT
elif [ "${PART}" = 4 ]; then
  W=/tmp/part4; rm -rf "$W"; mkdir -p "$W"; ROOT=$OUT; OUT=$W
  SPECS=layer_norm,rms_norm,softmax,log_softmax,logsumexp,cumsum,row_sum,argmax,topk,gelu,silu,linear,embedding,cross_entropy,rope
  TAILN=25 step false_alarms_3 200 python3 bench/false_alarms.py --device cuda --rungs 3 --seeds 0 --budget-s 170 \
    --specs $SPECS --json "$OUT/false_alarms_3.json" &
  TAILN=8 step climb_sdpa_3 200 python3 -m kladder.cli climb tests/specs/torch_ops.py::sdpa --rungs 3 --device cuda \
    --json "$OUT/climb_sdpa_3.json" --log "$OUT/climb_sdpa_3.jsonl" &
  for c in decode_group16 compounding_bias; do
    for k in "" "--fixed"; do
      TAILN=4 step "climb_${c}$k" 200 python3 -m kladder.cli zoo climb $c $k --rungs 8 --device cuda \
        --json "$OUT/climb_${c}$k.json" &
    done
  done
  wait
  cp "$OUT/summary.txt" "$ROOT/summary.txt"
  tar czf "$ROOT/part4.tgz" -C /tmp part4
  OUT=$ROOT
elif [ "${PART}" = 5 ]; then
  W=/tmp/part5; rm -rf "$W"; mkdir -p "$W"; ROOT=$OUT; OUT=$W
  TAILN=4 step rung5_tests 200 python3 -m pytest -q -p no:cacheprovider tests/test_rung5.py tests/test_zoo_rung5_kernels.py
  step throughput 100 python3 bench/repeat_throughput.py "$OUT/throughput.json" 2 3
  TAILN=30 step fence_variants 100 python3 bench/fence_variants.py "$OUT/fence_variants.json" 1.2
  TAILN=6 step climb_missing_fence 200 python3 -m kladder.cli zoo climb missing_fence --rungs 5 --device cuda \
    --json "$OUT/climb_missing_fence.json"
  cp "$OUT/summary.txt" "$ROOT/summary.txt"
  tar czf "$ROOT/part5.tgz" -C /tmp part5
  OUT=$ROOT
fi
cat "$OUT/summary.txt"
