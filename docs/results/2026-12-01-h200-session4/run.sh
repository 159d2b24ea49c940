#!/usr/bin/env bash
# The H200 call of session 4 (issue 19: a failure is the kernel's alone; issue 24's bench), one
# device call: timing first and alone, then the checks side by side, then the shared-device bench
# (itself three climbs side by side). Everything lands in $OUT/session4.tgz and $OUT/summary.txt.
set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/session4; rm -rf "$W"; mkdir -p "$W"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
kl() { python3 -m kladder.cli "$@"; }
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null; } > "$W/env.txt" 2>&1
step() {  # name, timeout in s, then the command; its output to $W/NAME.txt
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout "$t" "$@" > "$W/$name.txt" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$W/summary.txt"
  tail -${TAILN:-6} "$W/$name.txt" | cut -c1-400 >> "$W/summary.txt"
}
