# sourced by run1.sh / run2.sh: the image's python lacks some of kladder's dependencies; install the carried wheels of those only
set -u
OUT=${OUT:-/tmp/kladder-results}; mkdir -p "$OUT"
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
python3 - > "$OUT/env.txt" 2>&1 <<'PY'
import glob, importlib, subprocess, sys
need = {"jsonschema": ["jsonschema", "jsonschema_specifications", "referencing", "rpds_py", "attrs"],
        "hypothesis": ["hypothesis", "sortedcontainers", "attrs"], "rich": ["rich", "markdown_it_py", "mdurl", "pygments"],
        "liger_kernel": ["liger_kernel"]}
wheels = set()
for mod, dists in need.items():
    try:
        importlib.import_module(mod); print(mod, "present")
    except ImportError:
        print(mod, "missing: from .whl"); wheels |= {w for d in dists for w in glob.glob(f".whl/{d}-*.whl")}
if wheels:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--target", "/tmp/site", *sorted(wheels)], check=True)
PY
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(), torch.cuda.get_device_capability())"
  git log -1 --format='tree at %h %s' 2>/dev/null; date -u; } >> "$OUT/env.txt" 2>&1
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  if [ "$(left)" -lt 20 ]; then echo "== $name skipped: out of time" >> "$OUT/summary.txt"; return; fi
  [ "$t" -gt "$(left)" ] && t=$(left)
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1
  echo "== $name exit=$? wall=$(( $(date +%s) - s ))s" >> "$OUT/summary.txt"; tail -n "${TAILN:-25}" "$OUT/$name.txt" | cut -c1-400 >> "$OUT/summary.txt"; }
