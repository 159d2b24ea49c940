#!/usr/bin/env bash
# The second H200 call of session 5: kladder bench's CLI (issue 24) on an idle device. (run.sh's
# own bench steps never ran: its final `wait` also waited on the background packing loop, so the
# call sat until its 600 s limit after the climbs had ended at 120 s; here the loop is killed.)
set -u
OUT=${OUT:-/tmp/kladder-results}
W=/tmp/session5b; rm -rf "$W"; mkdir -p "$W"
python3 -m pip install -q --no-index .whl/*.whl > "$W/pip.txt" 2>&1
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
KL="python3 -m kladder.cli"
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout "$t" "$@" > "$W/$name.txt" 2>&1
  echo "$name exit=$? wall=$(( $(date +%s) - s ))s" >> "$W/summary.txt"; tail -${TAILN:-4} "$W/$name.txt" | cut -c1-300 >> "$W/summary.txt"; }
TAILN=16 step bench_ab 150 $KL bench kladder.zoo.rmsnorm_n_tail::spec --against kladder.zoo.rmsnorm_n_tail::fixed --device cuda --json "$W/bench_ab.json"
TAILN=16 step bench_aa 150 $KL bench kladder.zoo.rmsnorm_n_tail::fixed --against kladder.zoo.rmsnorm_n_tail::fixed --device cuda --json "$W/bench_aa.json"
python3 -c "import jsonschema; print('jsonschema', jsonschema.__version__)" >> "$W/summary.txt" 2>&1
tar -C /tmp -czf "$OUT/session5b.tgz" session5b
cat "$W/summary.txt"
