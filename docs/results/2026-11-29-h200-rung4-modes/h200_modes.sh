#!/usr/bin/env bash
# Rung 4's CUDA modes on the GPU: the fixtures in tests/specs/gpu_modes.py (a pointer-keyed
# memo that a graph capture turns stale, a wrapper on its own stream, a correct wrapper) and
# the zoo's fixed twins, each climbed at rung 4 alone. Run from the repository root with $OUT.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}
mkdir -p "$OUT/modes"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
run() {  # name, then the climb's arguments
  local name=$1; shift
  local s=$(date +%s.%N)
  python3 -m kladder.cli "$@" --rungs 4 --device cuda --json "$OUT/modes/$name.json" --log "$OUT/modes/$name.jsonl" > "$OUT/modes/$name.txt" 2>&1
  local rc=$?
  local e=$(date +%s.%N)
  echo "$name exit=$rc wall=$(python3 -c "print(round($e-$s,1))")s $(python3 -c "import json;d=json.load(open('$OUT/modes/$name.json'));print(d['rungs'][3]['counts'])" 2>&1)" | tee -a "$OUT/summary.txt"
}
for s in pointer_memo own_stream steady; do run "$s" climb "tests/specs/gpu_modes.py::$s"; done
for c in ${TWINS:-rmsnorm_n_tail}; do run "$c.fixed" zoo climb "$c" --fixed; done
for c in ${BUGGY:-jit_key_closure}; do run "$c.buggy" zoo climb "$c"; done
tar czf "$OUT/modes.tgz" -C "$OUT" modes && rm -rf "$OUT/modes"
