#!/usr/bin/env bash
# Rung 4 on the GPU: every rung-4 zoo case (buggy and twin) and the CUDA-mode fixtures of
# tests/specs/gpu_modes.py, each climbed at rung 4 alone, JOBS climbs at a time (one GPU,
# many CPU cores: a climb is mostly host time), then the GPU-only kernel tests.
# Run from the repository root on the GPU machine, with $OUT set to a folder for the results.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}
mkdir -p "$OUT/rung4"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
one() {  # name, then the climb's arguments
  local name=$1; shift
  local s=$(date +%s.%N)
  timeout "${CLIMB_S:-480}" python3 -m kladder.cli "$@" --rungs 4 --device cuda --json "$OUT/rung4/$name.json" \
    --log "$OUT/rung4/$name.jsonl" > "$OUT/rung4/$name.txt" 2>&1
  local rc=$?
  local e=$(date +%s.%N)
  echo "$name exit=$rc wall=$(python3 -c "print(round($e-$s,1))")s $(python3 -c "
import json, collections
d = json.load(open('$OUT/rung4/$name.json'))
pts = d['rungs'][3]['points']
by = collections.defaultdict(collections.Counter)
for p in pts: by[p['mode']][p['status']] += 1
print(' '.join(f'{m}:' + ','.join(f'{k}={v}' for k, v in c.items()) for m, c in by.items()))" 2>&1)" >> "$OUT/summary.txt"
}
export -f one; export OUT
{
  for c in ${CASES:-splitk_semaphore_graph wrong_stream jit_key_closure stale_state plan_cache_restart undeclared_mutation}; do
    echo "$c.buggy zoo climb $c"; echo "$c.fixed zoo climb $c --fixed"
  done
  for s in ${FIXTURES:-own_stream pointer_memo steady}; do echo "$s climb tests/specs/gpu_modes.py::$s"; done
} | xargs -P "${JOBS:-8}" -L 1 bash -c 'one "$@"' _
sort -o "$OUT/summary.txt" "$OUT/summary.txt"; cat "$OUT/summary.txt"
[ "${TESTS:-1}" = 1 ] && TRITON_INTERPRET=0 python3 -m pytest -q -p no:cacheprovider tests/test_zoo_rung4_gpu_kernels.py 2>&1 | tail -15 | tee "$OUT/gpu_kernel_tests.txt"
tar czf "$OUT/rung4.tgz" -C "$OUT" rung4 && rm -rf "$OUT/rung4"
