#!/usr/bin/env bash
# The third H200 call of session 5, on the merged tree of this session's branches: the CUDA
# paths that changed (typed facts through the generated schema, torch settings flipped by one
# context manager, post_graph typed, rung 4's integer poison, gradients), the HTML report's
# maps on 4 GiB points, the history; then, alone on the device, the overhead bench through
# bench/run.py and the output hash's cost.
set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/session5c; rm -rf "$W"; mkdir -p "$W"
python3 -m pip install -q --no-index .whl/*.whl > "$W/pip.txt" 2>&1
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
KL="python3 -m kladder.cli"
( while sleep 20; do tar -C /tmp -czf "$OUT/.p.tgz" session5c 2>/dev/null && mv "$OUT/.p.tgz" "$OUT/session5c.tgz"; done ) &
PACKER=$!
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout "$t" "$@" > "$W/$name.txt" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$W/summary.txt"; tail -${TAILN:-4} "$W/$name.txt" | cut -c1-300 >> "$W/summary.txt"; }
summary() { python3 -c "
import json, collections, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(p['status'] for r in d['rungs'] for p in r['points'])
f = collections.Counter((p.get('failure') or p['status']) for r in d['rungs'] for p in r['points'] if p['status'] not in ('passed', 'skipped'))
print('   ', sys.argv[1].rsplit('/', 1)[-1], 'exit', d['exit_code'], dict(c), 'not passed:', dict(f), 'shrunk:', [(s['rung'], s.get('smallest_id'), s.get('cannot_shrink')) for s in d.get('shrunk', [])])
import jsonschema
jsonschema.validate(d, json.load(open('docs/report.schema.json'))); print('    schema: valid')
" "$1" >> "$W/summary.txt" 2>&1; }
z() { local n=$1 t=$2; shift 2; step "$n" "$t" $KL "$@" --device cuda -q --json "$W/$n.json" --history "$W/history.sqlite"; summary "$W/$n.json"; }
pids=()
( TAILN=6 step pytest_a 300 python3 -m pytest -q -p no:cacheprovider tests/test_state_passed.py tests/test_guarded_alloc.py tests/test_graphs_claim.py tests/test_facts.py tests/test_declarations.py tests/test_grads.py ) & pids+=($!)
( TAILN=6 step pytest_b 300 python3 -m pytest -q -p no:cacheprovider tests/test_rung5.py tests/test_zoo_rung5_kernels.py ) & pids+=($!)
( z fence_r5 200 zoo climb missing_fence --rungs 5; z ltw_r1 200 zoo climb last_tile_wrap --rungs 1 --html "$W/ltw.html" ) & pids+=($!)
( z ln_dw_r2 150 zoo climb layernorm_dw_half_accum --rungs 2; z ln_dw_fixed 200 zoo climb layernorm_dw_half_accum --fixed --rungs 1-5;
  z ce_r3 150 zoo climb ce_grad_scale_skipped; z torch_grads 200 climb tests/specs/grads_torch.py::layernorm --rungs 1-5 ) & pids+=($!)
wait "${pids[@]}"
$KL history --history "$W/history.sqlite" > "$W/history.txt" 2>&1; head -12 "$W/history.txt" >> "$W/summary.txt"
# alone on the device: timings
TAILN=14 step overhead 150 python3 -m bench --out "$W/overhead.json" overhead --device cuda --rounds 30
TAILN=8 step output_hash 90 python3 bench/output_hash.py --device cuda --gib 4 --repeats 3 --json "$W/output_hash.json"
kill $PACKER 2>/dev/null; wait $PACKER 2>/dev/null
tar -C /tmp -czf "$OUT/session5c.tgz" session5c
cp "$W/summary.txt" "$OUT/summary3.txt"; cat "$W/summary.txt"
