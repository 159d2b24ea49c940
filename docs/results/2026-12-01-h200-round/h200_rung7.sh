#!/usr/bin/env bash
# Rung 7 on the GPU: the four rung-7 zoo cases (buggy and twin) climbed at rung 7 alone, with the
# CUDA paths: dispatch through the profiler's kernel names and the launch recorder, flags through
# the compiled binaries' digests, the compiler cache-key point (TRITON_DEFAULT_FP_FUSION=0), the
# fingerprint; one climb of a fixture with TORCH_CUDA_ARCH_LIST=8.0 (its header must warn that the
# H200, 9.0, is not that target); then bench/rung7_probe.py (what the recorder and the profiler see,
# case by case, and whether the flag's PTX holds evict_first); then the rung-7 kernel tests on CUDA.
# Run from the repository root on the GPU machine, with $OUT set to a folder for the results;
# about 3 minutes on an H200.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}
mkdir -p "$OUT/rung7"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
one() {  # name, then the climb's arguments
  local name=$1; shift
  local s=$(date +%s.%N)
  timeout "${CLIMB_S:-200}" python3 -m kladder.cli "$@" --rungs 7 --device cuda --json "$OUT/rung7/$name.json" \
    --log "$OUT/rung7/$name.jsonl" > "$OUT/rung7/$name.txt" 2>&1
  local rc=$?
  local e=$(date +%s.%N)
  echo "$name exit=$rc wall=$(python3 -c "print(round($e-$s,1))")s $(python3 -c "
import json, collections
d = json.load(open('$OUT/rung7/$name.json'))
pts = d['rungs'][6]['points']
by = collections.defaultdict(collections.Counter)
for p in pts: by[p['mode']][p['status']] += 1
fails = sorted({p['failure'] for p in pts if p['failure']})
print(' '.join(f'{m}:' + ','.join(f'{k}={v}' for k, v in c.items()) for m, c in by.items()), 'failures:', fails,
      'warnings:', d['fingerprint'].get('warnings'))" 2>&1)" >> "$OUT/summary.txt"
}
export -f one; export OUT
{
  for c in ${CASES:-silent_fallback wrong_path_dispatch flag_no_effect float_config_cells}; do
    echo "$c.buggy zoo climb $c"; echo "$c.fixed zoo climb $c --fixed"
  done
  echo "fixture.flag_reaches climb tests/specs/toolchain.py::flag_reaches"
  echo "fixture.flag_lost climb tests/specs/toolchain.py::flag_lost"
} | xargs -P "${JOBS:-10}" -L 1 bash -c 'one "$@"' _ &
TORCH_CUDA_ARCH_LIST=8.0 timeout 200 python3 -m kladder.cli climb tests/specs/toolchain.py::route_kept --rungs 7 \
  --device cuda --json "$OUT/rung7/arch_warning.json" --log "$OUT/rung7/arch_warning.jsonl" > "$OUT/rung7/arch_warning.txt" 2>&1
echo "arch_warning exit=$? $(grep -m1 'warning: TORCH_CUDA_ARCH_LIST' "$OUT/rung7/arch_warning.txt")" >> "$OUT/summary.txt"
timeout 120 python3 bench/rung7_probe.py > "$OUT/probe.txt" 2>&1; echo "probe exit=$?" >> "$OUT/probe.txt"
wait
sort -o "$OUT/summary.txt" "$OUT/summary.txt"; cat "$OUT/summary.txt" "$OUT/probe.txt"
[ "${TESTS:-1}" = 1 ] && TRITON_INTERPRET=0 timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_zoo_rung7_kernels.py \
  2>&1 | tail -15 | tee "$OUT/gpu_kernel_tests.txt"
for n in wrong_path_dispatch.buggy flag_no_effect.buggy; do head -60 "$OUT/rung7/$n.txt" > "$OUT/$n.report.txt"; done
tar czf "$OUT/rung7.tgz" -C "$OUT" rung7 && rm -rf "$OUT/rung7"
