#!/usr/bin/env bash
# The zoo on the GPU: each case's buggy kernel climbed at its own rung, each twin at rungs 1-3
# (and 8 for rung-8 cases), the rung-8 cases' buggy kernels also at rungs 1-3 (what the kernel
# rungs let through), and the MiniLM adapter fixture at rung 8; JOBS climbs at a time (one GPU,
# many CPU cores: a climb is mostly host time). Rung-4 cases: docs/results/2026-11-30-h200-rung4/h200_rung4.sh.
# Run from the repository root on the GPU machine, with $OUT set to a folder for the results.
set -u
export PYTHONPATH=$PWD/src:${EXTRA_PATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}
mkdir -p "$OUT/zoo"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
one() {  # name rungs, then the climb's arguments
  local name=$1 rungs=$2; shift 2
  local s=$(date +%s.%N)
  timeout "${CLIMB_S:-300}" python3 -m kladder.cli "$@" --rungs "$rungs" --device cuda --json "$OUT/zoo/$name.json" \
    --log "$OUT/zoo/$name.jsonl" > "$OUT/zoo/$name.txt" 2>&1
  local rc=$?
  local e=$(date +%s.%N)
  echo "$name rungs=$rungs exit=$rc wall=$(python3 -c "print(round($e-$s,1))")s $(python3 -c "
import json
d = json.load(open('$OUT/zoo/$name.json'))
print('lowest_failing_rung', d['lowest_failing_rung'], ' '.join(f\"r{r['rung']}:\" + ','.join(f'{k}={v}' for k, v in r['counts'].items() if v) for r in d['rungs'] if r['climbed']))" 2>&1)" >> "$OUT/summary.txt"
}
export -f one; export OUT
cases() { python3 -c "
from kladder.cases import case_modules
for n, m in case_modules().items():
    r = m.CASE['rung']
    if r == 4: continue
    print(n, r)"; }
{
  cases | while read -r c r; do
    [ -n "${CASES:-}" ] && [[ " $CASES " != *" $c "* ]] && continue
    echo "$c.buggy $r zoo climb $c"
    if [ "$r" = 8 ]; then echo "$c.buggy.kernel-rungs 1-3 zoo climb $c"; echo "$c.fixed 1-3,8 zoo climb $c --fixed"
    else echo "$c.fixed 1-3 zoo climb $c --fixed"; fi
  done
  [ "${MINILM:-1}" = 1 ] && { echo "minilm_layernorm.good 8 climb tests/specs/minilm_layernorm.py::good"
                              echo "minilm_layernorm.bad 8 climb tests/specs/minilm_layernorm.py::bad"; }
} | xargs -P "${JOBS:-12}" -L 1 bash -c 'one "$@"' _
sort -o "$OUT/summary.txt" "$OUT/summary.txt"; cat "$OUT/summary.txt"
tar czf "$OUT/zoo.tgz" -C "$OUT" zoo && rm -rf "$OUT/zoo"
