#!/usr/bin/env bash
# Device call 1 of 2026-12-06 (it ran on an H100; call 2 on an H200) (issue 25's measurements), alone on the device:
#   the checks' cost against the bare call (bench overhead), rung 5 against the bare graph replay
#   (bench throughput), then the default climb of the zoo's rmsnorm twin, this tree against
#   0d23320 (main before issue 25's work; `git archive 0d23320` into .bench/base, carried) and this
#   tree with the fork server on (KLADDER_FORKSERVER=1), alternating, as many rounds as fit.
# run from the repository root: OUT=DIR bash docs/results/2026-12-06-h200/run1.sh   (carry .whl .bench)
set -u
OUT=${OUT:-/tmp/kladder-results}; mkdir -p "$OUT"
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
# the image's python lacks some of kladder's dependencies: install the carried wheels of those only
python3 - > "$OUT/env.txt" 2>&1 <<'PY'
import glob, importlib, subprocess, sys
need = {"jsonschema": ["jsonschema", "jsonschema_specifications", "referencing", "rpds_py", "attrs"],
        "hypothesis": ["hypothesis", "sortedcontainers", "attrs"], "rich": ["rich", "markdown_it_py", "mdurl", "pygments"]}
wheels = set()
for mod, dists in need.items():
    try:
        importlib.import_module(mod); print(mod, "present")
    except ImportError:
        print(mod, "missing: from .whl"); wheels |= {w for d in dists for w in glob.glob(f".whl/{d}-*.whl")}
if wheels:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", "/tmp/site", *sorted(wheels)], check=True)
PY
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(), torch.cuda.get_device_capability())"
  git log -1 --format='tree at %h %s' 2>/dev/null; date -u; } >> "$OUT/env.txt" 2>&1
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1
  echo "== $name exit=$? wall=$(( $(date +%s) - s ))s" >> "$OUT/summary.txt"; tail -n "${TAILN:-30}" "$OUT/$name.txt" | cut -c1-400 >> "$OUT/summary.txt"; }
step overhead 120 python3 bench/overhead.py --device cuda --rounds 30 --json "$OUT/overhead.json"
step throughput 90 python3 bench/repeat_throughput.py "$OUT/throughput.json"
step warm 90 python3 -m kladder.cli zoo climb rmsnorm_n_tail --fixed --rungs 1 --device cuda --no-history --shrink-s 0 --quiet
step climb_speed $(( $(left) + 30 )) python3 bench/climb_speed.py --base .bench/base/src --device cuda --rounds 3 --no-warmup \
    --variant fork:KLADDER_FORKSERVER=1 --deadline-s $(( $(left) - 10 )) --keep /tmp/keep --json "$OUT/climb_speed.json"
tar -C /tmp -czf "$OUT/reports.tgz" keep 2>/dev/null
cat "$OUT/summary.txt"
