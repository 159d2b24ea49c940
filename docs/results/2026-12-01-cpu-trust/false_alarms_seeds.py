import os, sys, time, collections
os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests"))
import torch; torch.set_num_threads(1)
from test_false_alarms import climb_in_process
from specs.torch_ops import SPECS
names = sys.argv[2:] or list(SPECS)
seeds = tuple(int(s) for s in sys.argv[1].split(","))
tot = 0
for n in names:
    t = time.perf_counter()
    outs = climb_in_process(SPECS[n], seeds=seeds)
    dt = time.perf_counter() - t; tot += dt
    c = collections.Counter(o.status for o in outs)
    bad = [o for o in outs if o.status not in ("passed", "skipped")]
    warned = [o for o in outs if o.warnings]
    print(f"{n:14} {len(outs):5} points {dt:6.1f} s  {dict(c)}  warned {len(warned)}", flush=True)
    for o in bad[:4]:
        f = o.headline
        print("   FAIL", o.point.id, o.status, f.check if f else o.note, f.facts.get("budget") if f else "", f.largest if f else "", {k: v for k, v in (f.facts if f else {}).items() if k in ("peer", "spread")})
    for o in warned[:2]:
        print("   WARN", o.point.id, o.warnings[0].facts)
print("total", round(tot, 1))
