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
# what is done so far comes back even if the call is cut short: the folder packed every 20 s
( while sleep 20; do tar -C /tmp -czf "$OUT/.p.tgz" session4b 2>/dev/null && mv "$OUT/.p.tgz" "$OUT/session4b.tgz"; done ) &
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
# the zoo on this machine's CPUs (Triton 3.6's interpreter), each case at its own rung, the buggy
# kernel and its twin, 12 climbs at a time: a table to set beside the 2-core machine's
zoo_cpu() {
  mkdir -p "$W/zoo_cpu"
  python3 -m kladder.cli zoo list | awk '{print $1, $3}' | while read c r; do echo "$c $r"; echo "$c $r --fixed"; done |
    xargs -P 12 -L 1 sh -c 'timeout 280 env -u TRITON_INTERPRET python3 -m kladder.cli zoo climb "$0" $2 --rungs "$1" --device cpu -q --json "'"$W"'/zoo_cpu/$0$2.json" > "'"$W"'/zoo_cpu/$0$2.txt" 2>&1; echo "$0 $1 $2 exit=$?"' > "$W/zoo_cpu/exits.txt"
  python3 - "$W/zoo_cpu" >> "$W/summary.txt" <<'PY'
import json, os, sys
d = sys.argv[1]
rows, ok = [], 0
for line in open(os.path.join(d, "exits.txt")):
    pass
cases = sorted({f.split(".json")[0].replace("--fixed", "") for f in os.listdir(d) if f.endswith(".json")})
for c in cases:
    def load(name):
        try:
            return json.load(open(os.path.join(d, name + ".json")))
        except Exception:
            return None
    bug, fix = load(c), load(c + "--fixed")
    caught = bug is not None and bug.get("lowest_failing_rung") is not None
    clean = fix is not None and fix.get("exit_code") in (0, 5)
    ran = bug is not None and any(p["status"] not in ("skipped",) for r in bug["rungs"] for p in r["points"])
    ok += caught and clean
    print(f"  zoo-cpu {c:28} buggy {'caught' if caught else ('ran, MISSED' if ran else 'nothing ran (GPU case)')}; "
          f"twin {'clean' if clean else 'NOT CLEAN: exit ' + str(fix and fix.get('exit_code'))}")
print(f"  zoo-cpu: {ok}/{len(cases)} caught with a clean twin")
PY
}
zoo_cpu &
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
