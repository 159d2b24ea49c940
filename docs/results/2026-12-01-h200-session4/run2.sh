#!/usr/bin/env bash
# The second H200 call of session 4: what the first call's `kl` shell function (not visible to
# `timeout`) kept from running: the zoo cases this session added or touched on
# CUDA, a correct torch op at rungs 3-4, the slow-stage climb; and why test_guarded_alloc's
# zoo-kernel test raised under this machine's Triton 3.6 interpreter.
set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/session4b; rm -rf "$W"; mkdir -p "$W"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
KL="python3 -m kladder.cli"
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout "$t" "$@" > "$W/$name.txt" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$W/summary.txt"; tail -${TAILN:-4} "$W/$name.txt" | cut -c1-300 >> "$W/summary.txt"; }
summary() { python3 -c "
import json, collections, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(p['status'] for r in d['rungs'] for p in r['points'])
f = collections.Counter((p.get('failure') or p['status']) for r in d['rungs'] for p in r['points'] if p['status'] not in ('passed', 'skipped'))
print('   ', sys.argv[1].rsplit('/', 1)[-1], 'exit', d['exit_code'], dict(c), 'not passed:', dict(f))" "$1" >> "$W/summary.txt" 2>&1; }
z() { local n=$1; shift; step "$n" 100 $KL "$@" --device cuda -q --json "$W/$n.json"; summary "$W/$n.json"; }
( z eo_r1 zoo climb empty_like_overrun --rungs 1; z eo_fixed_r1 zoo climb empty_like_overrun --fixed --rungs 1 ) &
( z eo_fixed_r4 zoo climb empty_like_overrun --fixed --rungs 4; z splitk_r4 zoo climb splitk_semaphore_graph --rungs 4; z splitk_fixed_r4 zoo climb splitk_semaphore_graph --fixed --rungs 4 ) &
( z scratch_r3 zoo climb input_scratch --rungs 3; z scratch_fixed_r3 zoo climb input_scratch --fixed --rungs 3; step slow_stages 60 $KL climb tests/specs/slow_stages.py --rungs 1 --device cuda --timeout 2 -q --json "$W/slow_stages.json"; summary "$W/slow_stages.json" ) &
( z linear_r34 climb tests/specs/torch_ops.py::linear --rungs 3-4 ) &
TAILN=12 step interp_probe 90 env TRITON_INTERPRET=1 python3 -c "
from kladder.zoo import empty_like_overrun as z
from kladder.point import Point
from kladder.run.trial import run_point
from kladder.report.words import message
for n, dt in ((1, 'float32'), (1025, 'float16')):
    o = run_point(z.spec, Point('add', 1, (('N', n),), (('a', dt),), seed=1), 'cpu').outcome
    print(n, dt, o.status, [message(f)[:400] for f in o.findings], o.note)
"
wait
tar -C /tmp -czf "$OUT/session4b.tgz" session4b
cp "$W/summary.txt" "$OUT/summary2.txt"; cat "$W/summary.txt"
