"""The largest err/default ratio among failures the honest peers excuse, over the false-alarm suite (a wrapper of bench/false_alarms.py)."""
import sys, runpy, json, collections
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
from kladder.checks import values
orig = values.settle
seen = collections.defaultdict(float)
cur = {"p": ""}
def settle(m, out, ref, tol, *a, **k):
    import torch
    before = m
    res = orig(m, out, ref, tol, *a, **k)
    # ratio of each excusable failing element's error to its default, for those now passing
    flat = before.bad.reshape(-1)
    o = out.detach().reshape(-1).double(); r = ref.detach().reshape(-1).double()
    idx = torch.nonzero(flat & o.isfinite() & r.isfinite()).flatten()
    if idx.numel():
        scale = torch.maximum(r[idx].abs(), before.rms[idx // before.cols].to(r.dtype))
        ratio = (o[idx] - r[idx]).abs() / (tol.atol + tol.rtol * scale)
        still = set() if res is None else set(torch.nonzero(res.bad.reshape(-1)).flatten().tolist())
        ok = torch.tensor([int(i) not in still for i in idx.tolist()], dtype=torch.bool)
        if ok.any():
            v = float(ratio[ok].max())
            key = cur["p"]
            seen[key] = max(seen[key], v)
    return res
values.settle = settle
import kladder.run.trial as trial
orig_rp = trial.run_point
def rp(spec, p, device, *a, **k):
    cur["p"] = f"{spec.name} {p.id}"
    return orig_rp(spec, p, device, *a, **k)
trial.run_point = rp
sys.argv = ["false_alarms.py", *sys.argv[1:]]
try:
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "false_alarms.py"), run_name="__main__")
except SystemExit:
    pass
top = sorted(seen.items(), key=lambda kv: -kv[1])
print("TOP RATIOS")
for k, v in top[:40]:
    print(f"{v:12.1f} {k}")
json.dump(top, open(os.environ.get("RATIOS_JSON", os.devnull), "w"))
