#!/usr/bin/env bash
# The first H200 call of session 5: what session 4's calls left unrun (issue 19's zoo cases and
# torch ops on CUDA, each with room, nothing else on the host beside them) and kladder bench's CLI
# (issue 24). jsonschema comes from wheels carried in .whl/ (the device has no network).
set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/session5; rm -rf "$W"; mkdir -p "$W"
pip install -q --no-index .whl/*.whl > "$W/pip.txt" 2>&1
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
KL="python3 -m kladder.cli"
( while sleep 20; do tar -C /tmp -czf "$OUT/.p.tgz" session5 2>/dev/null && mv "$OUT/.p.tgz" "$OUT/session5.tgz"; done ) &
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout "$t" "$@" > "$W/$name.txt" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$W/summary.txt"; tail -${TAILN:-4} "$W/$name.txt" | cut -c1-300 >> "$W/summary.txt"; }
summary() { python3 -c "
import json, collections, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(p['status'] for r in d['rungs'] for p in r['points'])
f = collections.Counter((p.get('failure') or p['status']) for r in d['rungs'] for p in r['points'] if p['status'] not in ('passed', 'skipped'))
print('   ', sys.argv[1].rsplit('/', 1)[-1], 'exit', d['exit_code'], dict(c), 'not passed:', dict(f))
try:
    import jsonschema
    jsonschema.validate(d, json.load(open('docs/report.schema.json'))); print('    schema: valid')
except ImportError:
    print('    schema: jsonschema missing')
" "$1" >> "$W/summary.txt" 2>&1; }
z() { local n=$1; shift; step "$n" 280 $KL "$@" --device cuda -q --json "$W/$n.json"; summary "$W/$n.json"; }
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())" > "$W/env.txt" 2>&1
nvidia-smi --query-gpu=driver_version,memory.total --format=csv >> "$W/env.txt" 2>&1
( z eo_r1 zoo climb empty_like_overrun --rungs 1; z eo_fixed_r4 zoo climb empty_like_overrun --fixed --rungs 4 ) &
( z splitk_r4 zoo climb splitk_semaphore_graph --rungs 4; z splitk_fixed_r4 zoo climb splitk_semaphore_graph --fixed --rungs 4 ) &
( z scratch_r3 zoo climb input_scratch --rungs 3; step slow_stages 120 $KL climb tests/specs/slow_stages.py --rungs 1 --device cuda --timeout 2 -q --json "$W/slow_stages.json"; summary "$W/slow_stages.json" ) &
( z linear_r34 climb tests/specs/torch_ops.py::linear --rungs 3-4 ) &
wait
# kladder bench's CLI on an idle device, after the climbs (issue 24): buggy vs fixed, fixed vs itself
TAILN=14 step bench_ab 120 $KL bench kladder.zoo.rmsnorm_n_tail::spec --against kladder.zoo.rmsnorm_n_tail::fixed --device cuda --json "$W/bench_ab.json"
TAILN=14 step bench_aa 120 $KL bench kladder.zoo.rmsnorm_n_tail::fixed --against kladder.zoo.rmsnorm_n_tail::fixed --device cuda --json "$W/bench_aa.json"
tar -C /tmp -czf "$OUT/session5.tgz" session5
cp "$W/summary.txt" "$OUT/summary.txt"; cat "$W/summary.txt"
