#!/usr/bin/env bash
# The guards around the kernel's own allocations on the GPU (run/guarded_alloc.py): the
# empty_like_overrun case and its twin at rung 1, the twin at rung 4 (CUDA graph capture with
# the hook off during capture, on in the warm-up; stream; compiled), the CUDA tests, and the
# hook's cost (bench/guarded_alloc.py). Run from the repository root on the GPU machine.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kladder-results}
mkdir -p "$OUT/guarded_alloc"
cd_out="$OUT/guarded_alloc"
summary() { python3 -c "
import json, collections, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(p['status'] for r in d['rungs'] for p in r['points'])
f = collections.Counter((p['id'].split('-')[1], p.get('failure')) for r in d['rungs'] for p in r['points'] if p['status'] == 'failed')
print(dict(c), 'failed:', sorted(f))" "$1"; }
for args in "empty_like_overrun --rungs 1:bug_r1" "empty_like_overrun --fixed --rungs 1:fixed_r1" "empty_like_overrun --fixed --rungs 4:fixed_r4"; do
  name=${args##*:}; a=${args%:*}
  timeout 480 python3 -m kladder.cli zoo climb $a --device cuda --json "$cd_out/$name.json" > "$cd_out/$name.txt" 2>&1
  echo "$name exit=$? $(summary "$cd_out/$name.json")"
done
timeout 300 python3 -m pytest -q tests/test_guarded_alloc.py 2>&1 | tail -2
timeout 300 python3 bench/guarded_alloc.py "$cd_out/bench.json" --device cuda --rounds 3 2>&1 | tail -5
