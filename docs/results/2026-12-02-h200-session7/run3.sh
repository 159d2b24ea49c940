#!/usr/bin/env bash
# The third H200 call of session 7, on main a8753d5 (every branch of the session merged: the
# fork server, the backward on the stream and compiled, golden/strict in the report, the host-busy
# hang, the suite's cuts). First the CUDA confirmations side by side; then, alone on the device,
# the timings: the default climb of the rmsnorm twin, this tree against 9b7e7c9 (the session's
# start, before the fork server) alternating (bench/climb_speed.py). The overhead and throughput
# benches are not re-run: their code paths did not change since session 5.


set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/s7c; rm -rf "$W"; mkdir -p "$W"
python3 -m pip install -q --no-index .whl/*.whl > "$W/pip.txt" 2>&1
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
KL="python3 -m kladder.cli"
( while sleep 20; do tar -C /tmp -czf "$OUT/.p.tgz" s7c 2>/dev/null && mv "$OUT/.p.tgz" "$OUT/s7c.tgz"; done ) &
PACKER=$!
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout "$t" "$@" > "$W/$name.txt" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$W/summary.txt"; tail -${TAILN:-4} "$W/$name.txt" | cut -c1-300 >> "$W/summary.txt"; }
summary() { python3 -c "
import json, collections, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(p['status'] for r in d['rungs'] for p in r['points'])
f = collections.Counter((p.get('failure') or p['status']) for r in d['rungs'] for p in r['points'] if p['status'] not in ('passed', 'skipped'))
print('   ', sys.argv[1].rsplit('/', 1)[-1], 'exit', d['exit_code'], dict(c), 'not passed:', dict(f))
bad = [p['id'] for r in d['rungs'] for p in r['points'] if p['status'] not in ('passed', 'skipped')][:6]
print('    first not passed:', bad)
import jsonschema
jsonschema.validate(d, json.load(open('docs/report.schema.json'))); print('    schema: valid')
" "$1" >> "$W/summary.txt" 2>&1; }
z() { local n=$1 t=$2; shift 2; step "$n" "$t" $KL "$@" --device cuda --shrink-s 0 --json "$W/$n.json" --no-history; summary "$W/$n.json"; }
pids=()
( TAILN=6 step pytest_fork 150 python3 -m pytest -q -p no:cacheprovider tests/test_forkserver.py tests/test_host_busy.py tests/test_poison.py ) & pids+=($!)
( z router_r1 70 zoo climb router_lanes_256 --rungs 1; z router_fixed 130 zoo climb router_lanes_256 --fixed --rungs 1-5 ) & pids+=($!)
( z active_r1 70 zoo climb active_count_full_width --rungs 1; z active_fixed 130 zoo climb active_count_full_width --fixed --rungs 1-5 ) & pids+=($!)
( z gm_ring 90 climb tests/specs/grads_modes.py::ring_workspace --rungs 5; z gm_ring_fixed 90 climb tests/specs/grads_modes.py::ring_workspace_fixed --rungs 5;
  z ln_op 120 climb tests/specs/grads_torch.py::layernorm_op --rungs 4-5 ) & pids+=($!)
( z ln_half 170 climb tests/specs/grads_torch.py::layernorm_half --rungs 1-5 ) & pids+=($!)
( z warm 60 zoo climb rmsnorm_n_tail --fixed --rungs 1 ) & pids+=($!)
wait "${pids[@]}"
# alone on the device
TAILN=24 step climb_speed 330 python3 bench/climb_speed.py --base .bench/base/src --device cuda --rounds 2 --no-warmup --json "$W/climb_speed.json"
kill $PACKER 2>/dev/null; wait $PACKER 2>/dev/null
tar -C /tmp -czf "$OUT/s7c.tgz" s7c
cp "$W/summary.txt" "$OUT/summary3.txt"; cat "$W/summary.txt"
