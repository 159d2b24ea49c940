#!/usr/bin/env bash
# Issue 15 (verdicts you can trust) and issue 11 item 3 on the H200, in under 5 minutes:
#   1. memory.txt/json      bench/memory.py: peak device memory of three 4 GiB bfloat16 points
#                           (rows sampled; a GEMM and an elementwise op without rows=, their
#                           references on the host) against the kernel's own bytes: <= 3x each
#   2. overhead.txt/json    bench/overhead.py: guards + poison + comparison against the bare call,
#                           64x4096 and 16384x8192, the reference's cost apart (targets 3x, 1.5x)
#   3. interp.txt/json      tests/specs/interp_kernels.py on the GPU: the kernels Triton's
#                           interpreter gets wrong (2 * x in bfloat16, a float32 -> bfloat16 store,
#                           a libdevice exp) must PASS here (on the CPU they are "not judged")
#   4. cliff.txt            rows_int32_offset (int32 row * stride + col) repro'd at the two points
#                           around 2^31 elements of its bf16 logits: M = 14134 (no element past the
#                           cliff) passes for both kernels; M = 14136 (row 14135 starts past it)
#                           fails the buggy kernel (wrong values or an illegal memory access) and
#                           passes its twin
#   5. false_alarms.txt/json  bench/false_alarms.py: 16 correct torch ops at rungs 1-4 (big points
#                           apart: item 1), seeds 0 and 1, zero failed points and no bias warning
# Run from the repository root on the GPU machine, with $OUT set to a folder for the results.
set -u
export PYTHONPATH=$PWD/src:${EXTRA_PATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}
mkdir -p "$OUT"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
t() { local s=$(date +%s); "$@"; echo "exit=$? wall=$(( $(date +%s) - s ))s: $*"; }

t timeout 100 python3 bench/memory.py --json "$OUT/memory.json" > "$OUT/memory.txt" 2>&1
tail -1 "$OUT/memory.txt"
t timeout 45 python3 bench/overhead.py --device cuda --rounds 20 --json "$OUT/overhead.json" > "$OUT/overhead.txt" 2>&1
tail -1 "$OUT/overhead.txt"
for s in double_bf16 narrow_bf16 exp_libdevice; do
  t timeout 40 python3 -m kladder.cli climb "tests/specs/interp_kernels.py::$s" --rungs 1 --device cuda \
    --json "$OUT/interp_$s.json" --log "$OUT/interp_$s.jsonl" >> "$OUT/interp.txt" 2>&1
done
grep -E "^exit=|failed, .* passed" "$OUT/interp.txt"
for which in spec fixed; do for m in 14134 14136; do
  t timeout 60 python3 -m kladder.cli repro "kladder.zoo.rows_int32_offset::$which" \
    "{\"spec\":\"log_softmax\",\"rung\":1,\"dims\":[[\"M\",$m],[\"V\",151936]],\"dtypes\":[[\"x\",\"bfloat16\"]]}" \
    --device cuda
done; done > "$OUT/cliff.txt" 2>&1
grep -E "^exit=|^(PASSED|FAILED|SKIPPED|OOM|BROKEN)" "$OUT/cliff.txt"
t timeout $(( ${FA_BUDGET_S:-120} + 30 )) python3 bench/false_alarms.py --device cuda --rungs 1-4 --seeds 0,1 --budget-s ${FA_BUDGET_S:-120} \
  --json "$OUT/false_alarms.json" > "$OUT/false_alarms.txt" 2>&1
grep -E "points of|exit=" "$OUT/false_alarms.txt"
