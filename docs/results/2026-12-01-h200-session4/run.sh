#!/usr/bin/env bash
# The H200 call of session 4 (issue 19: a failure is the kernel's alone; issue 24's bench), one
# device call: timing first and alone, then the checks side by side, then the shared-device bench
# (itself three climbs side by side). Everything lands in $OUT/session4.tgz and $OUT/summary.txt.
set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/session4; rm -rf "$W"; mkdir -p "$W"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
KL="python3 -m kladder.cli"
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
summary() { python3 -c "
import json, collections, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(p['status'] for r in d['rungs'] for p in r['points'])
f = collections.Counter((p.get('failure') or p['status']) for r in d['rungs'] for p in r['points'] if p['status'] not in ('passed', 'skipped'))
print('exit', d['exit_code'], dict(c), 'not passed:', dict(f))" "$1" >> "$W/summary.txt" 2>&1; }

# A. timing, alone on the device: the GEMV point (w = 2 GiB), and kladder bench (issue 24)
echo "== A (alone)" >> "$W/summary.txt"
TAILN=12 step big_point 60 python3 bench/big_point.py --json "$W/big_point.json"
TAILN=12 step big_point_distinct_peers 60 python3 bench/big_point.py --values distinct --force-peers --json "$W/big_point_distinct_peers.json"
TAILN=8 step bench_rmsnorm_vs_fixed 60 $KL bench kladder.zoo.rmsnorm_n_tail::spec --against kladder.zoo.rmsnorm_n_tail::fixed --device cuda --json "$W/bench_rmsnorm_vs_fixed.json"
TAILN=8 step bench_fixed_vs_itself 60 $KL bench kladder.zoo.rmsnorm_n_tail::fixed --against kladder.zoo.rmsnorm_n_tail::fixed --device cuda --json "$W/bench_fixed_vs_itself.json"

# B. checks side by side: the false-alarm suite at rungs 1-2 (seeds 0, 1), the CUDA tests of this
# session, the zoo cases this session added or touched, a correct torch op at rungs 1-4
echo "== B (side by side)" >> "$W/summary.txt"
TAILN=14 step false_alarms_12 250 python3 bench/false_alarms.py --device cuda --rungs 1,2 --seeds 0,1 --budget-s 200 --json "$W/false_alarms_12.json" &
TAILN=25 step cuda_tests 250 python3 -m pytest -q -p no:cacheprovider -rs tests/test_graphs_claim.py tests/test_alone.py tests/test_guarded_alloc.py tests/test_peer_budget.py tests/test_bench.py &
(
  for c in "empty_like_overrun --rungs 1" "empty_like_overrun --fixed --rungs 1" "empty_like_overrun --fixed --rungs 4" \
           "splitk_semaphore_graph --rungs 4" "splitk_semaphore_graph --fixed --rungs 4" \
           "input_scratch --rungs 3" "input_scratch --fixed --rungs 3"; do
    n=$(echo "$c" | tr -d ' -' ); TAILN=3 step "zoo_$n" 120 $KL zoo climb $c --device cuda -q --json "$W/zoo_$n.json"; summary "$W/zoo_$n.json"
  done
  TAILN=3 step linear_r1234 200 $KL climb tests/specs/torch_ops.py::linear --rungs 1-4 --device cuda -q --json "$W/linear_r1234.json"; summary "$W/linear_r1234.json"
  TAILN=6 step slow_stages 60 $KL climb tests/specs/slow_stages.py --rungs 1 --device cuda --timeout 2 -q --json "$W/slow_stages.json"; summary "$W/slow_stages.json"
) &
wait

# C. many climbs, one device: three climbs of 4 GiB points side by side (itself the load)
echo "== C (three climbs side by side)" >> "$W/summary.txt"
TAILN=25 step shared_device 150 python3 bench/shared_device.py --rungs 1 --keep "$W/shared" --json "$W/shared_device.json"

tar -C /tmp -czf "$OUT/session4.tgz" session4
cp "$W/summary.txt" "$OUT/summary.txt"
cat "$W/summary.txt"
