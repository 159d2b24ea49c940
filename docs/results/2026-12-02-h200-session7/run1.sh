#!/usr/bin/env bash
# The first H200 call of session 7, on main 9b7e7c9 (session 6's merged work, never run on CUDA
# before): gradients through CUDA graphs (issue 22), the call stream and conditions (issue 21),
# the four issue-21 zoo cases and their twins, the examples, the cliff line on the HTML map
# (issue 23), torch's own ops as false-alarm checks. Climbs side by side (a test of kladder on a
# shared device, not a timing).
set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/s7a; rm -rf "$W"; mkdir -p "$W"
python3 -m pip install -q --no-index .whl/*.whl > "$W/pip.txt" 2>&1
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
KL="python3 -m kladder.cli"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$W/env.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)" >> "$W/env.txt" 2>&1
( while sleep 20; do tar -C /tmp -czf "$OUT/.p.tgz" s7a 2>/dev/null && mv "$OUT/.p.tgz" "$OUT/s7a.tgz"; done ) &
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
z() { local n=$1 t=$2; shift 2; step "$n" "$t" $KL "$@" --device cuda --shrink-s 0 --json "$W/$n.json" --history "$W/history.sqlite"; summary "$W/$n.json"; }
pids=()
( TAILN=8 step pytest_cuda 420 python3 -m pytest -q -p no:cacheprovider -x tests/test_grads.py tests/test_calls.py tests/test_conditions.py tests/test_declarations.py ) & pids+=($!)
( z ln_dw_r2 150 zoo climb layernorm_dw_half_accum --rungs 2; z ln_dw_fixed 300 zoo climb layernorm_dw_half_accum --fixed --rungs 1-5;
  z ce_r2 150 zoo climb ce_grad_scale_skipped --rungs 2; z ce_fixed 200 zoo climb ce_grad_scale_skipped --fixed --rungs 1-5 ) & pids+=($!)
( z torch_ln_grads 300 climb tests/specs/grads_torch.py::layernorm --rungs 1-5; z torch_linear 200 climb tests/specs/torch_ops.py::linear --rungs 1-4 ) & pids+=($!)
( for s in ring_bad ring_good cache_bad cache_good ring_undeclared; do z "stream_$s" 120 climb "tests/specs/stream_state.py::$s" --rungs 5; done
  for s in read_at_import read_at_call gated precise_default; do z "cond_$s" 150 climb "tests/specs/conditions.py::$s" --rungs 7; done ) & pids+=($!)
( z ewu_r2 150 zoo climb expert_wgrad_unwritten --rungs 2; z ewu_fixed 200 zoo climb expert_wgrad_unwritten --fixed;
  for c in router_lanes_256 active_count_full_width embedding_chunk_tail; do z "${c}_r1" 150 zoo climb $c --rungs 1; z "${c}_fixed" 250 zoo climb $c --fixed; done ) & pids+=($!)
( z ex_norm 200 climb examples/norm/rmsnorm_spec.py --rungs 1-5; z ex_tiled 200 climb examples/tiled/add2d_spec.py --rungs 1-5,7;
  z ex_routing 200 climb examples/routing/expert_counts_spec.py --rungs 1-5; z ex_stateful 200 climb examples/stateful/ringsum_spec.py --rungs 1-5;
  z ltw_r1 250 zoo climb last_tile_wrap --rungs 1 --html "$W/ltw.html" ) & pids+=($!)
wait "${pids[@]}"
$KL history --history "$W/history.sqlite" > "$W/history.txt" 2>&1; head -40 "$W/history.txt" >> "$W/summary.txt"
kill $PACKER 2>/dev/null; wait $PACKER 2>/dev/null
tar -C /tmp -czf "$OUT/s7a.tgz" s7a
cp "$W/summary.txt" "$OUT/summary1.txt"; cat "$W/summary.txt"
