#!/usr/bin/env bash
# The GPU run behind docs/results/: every zoo case and its twin climbed on the device, with
# the wall time of each climb, then the overhead benchmark. Run from the repository root on
# the GPU machine, with $OUT set to a folder for the results.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}
mkdir -p "$OUT/zoo"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
# CASES="a b" restricts the climbs to those cases; BENCH=0 leaves the benchmark out
for c in ${CASES:-$(python3 -m kladder.cli zoo list | awk '{print $1}')}; do
  for v in buggy fixed; do
    flag=""; [ "$v" = fixed ] && flag=--fixed
    s=$(date +%s.%N)
    python3 -m kladder.cli zoo climb "$c" $flag --device cuda --json "$OUT/zoo/$c.$v.json" \
      --log "$OUT/zoo/$c.$v.jsonl" > "$OUT/zoo/$c.$v.txt" 2>&1
    rc=$?
    e=$(date +%s.%N)
    low=$(python3 -c "import json;d=json.load(open('$OUT/zoo/$c.$v.json'));r=d['rungs'][0]['counts'];print('lowest_failing_rung', d['lowest_failing_rung'], r)" 2>&1)
    echo "$c $v exit=$rc wall=$(python3 -c "print(round($e-$s,1))")s $low" | tee -a "$OUT/summary.txt"
  done
done
[ "${BENCH:-1}" = 1 ] && python3 bench/overhead.py --device cuda --rounds 30 --json "$OUT/bench_overhead.json" | tee "$OUT/bench_overhead.txt"
tar czf "$OUT/zoo.tgz" -C "$OUT" zoo && rm -rf "$OUT/zoo"
