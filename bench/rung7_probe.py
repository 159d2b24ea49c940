"""Rung 7's CUDA paths, probed directly (docs/results/2026-12-01-h200-round/h200_rung7.sh runs it): what the launch recorder
(compiled binaries' digests) and the profiler (kernel names) see for each rung-7 zoo case and
its twin, and for tests/specs/toolchain.py's flag fixtures. Writes $OUT/rung7_probe.json and
prints one line per probe.

What it should show on an H200:
- silent_fallback: the buggy launcher launches no Triton kernel (profiler: torch's kernels
  only); the twin launches _fused_rmsnorm_kernel_fixed.
- wrong_path_dispatch: at S = 1, contiguous, the buggy launcher runs _attn_prefill_kernel, the
  twin _attn_decode_kernel; with k a strided cache view both run the decode kernel.
- flag_no_effect: the buggy launcher's EVICT_FIRST=False and True launch one binary (same
  cubin digest, no evict_first in its PTX); the twin's two binaries differ, and only the True
  one's PTX holds an evict_first load.
- float_config_cells: at (16, 1024) the buggy launcher launches BLOCK_M=4, BLOCK_N=64, the twin
  the swept BLOCK_M=16, BLOCK_N=256, num_warps=8.
- the toolchain fixtures: scale's TWICE=True and False launch two binaries ((6 x) / 3 against
  x * 2), scale_lost's one.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "specs"))

from kladder.core.fingerprint import fingerprint
from kladder.run.modes.tracing import Launches, Tracer, gpu_kernels
from kladder.zoo import flag_no_effect as fe
from kladder.zoo import float_config_cells as fc
from kladder.zoo import silent_fallback as sf
from kladder.zoo import wrong_path_dispatch as wp

DEV = "cuda"


def seen(fn) -> dict:
    box = []
    with Tracer() as t, Launches() as launched:
        gpu = gpu_kernels(lambda: box.append(fn()))
    return {"launches": [x.to_dict() for x in launched.seen], "gpu": sorted(gpu), "functions": t.functions()}


def names(s: dict) -> list:
    return [x["name"] for x in s["launches"]]


def evict_first_in_ptx(jit_fn) -> list:
    """For each binary the kernel has compiled in this process: its name, its digest and whether
    its PTX holds an evict_first load."""
    out = []
    for cache in getattr(jit_fn, "device_caches", {}).values():
        for kernel in cache[0].values():
            try:
                ptx = kernel.asm["ptx"]
            except Exception:  # noqa: BLE001 - no PTX kept for this binary
                ptx = ""
            out.append({"name": kernel.name, "evict_first_lines": sum("evict_first" in line for line in ptx.splitlines())})
    return out


def main() -> None:
    torch.manual_seed(0)
    torch.cuda.init()
    res = {"fingerprint": fingerprint(__file__, DEV)}
    x, w = torch.randn(64, 2880, dtype=torch.bfloat16, device=DEV), torch.randn(2880, device=DEV)
    res["silent_fallback"] = {k: seen(lambda f=f: f(x, w)) for k, f in
                              (("buggy", sf.fused_rmsnorm), ("twin", sf.fused_rmsnorm_fixed))}
    q = torch.randn(4, 8, 1, 64, dtype=torch.float16, device=DEV)
    k, v = (torch.randn(4, 8, 129, 64, dtype=torch.float16, device=DEV) for _ in range(2))
    kc, vc = (torch.randn(4, 8, 129, 80, dtype=torch.float16, device=DEV)[..., :64] for _ in range(2))
    ref = wp.attention_ref(q.double(), k.double(), v.double())
    refc = wp.attention_ref(q.double(), kc.double(), vc.double())
    res["wrong_path_dispatch"] = {}
    for label, f in (("buggy", wp.attention), ("twin", wp.attention_fixed)):
        for lay, (kk, vv, r) in (("contiguous", (k, v, ref)), ("cache_view", (kc, vc, refc))):
            box = {}
            s = seen(lambda box=box, f=f, kk=kk, vv=vv: box.setdefault("o", f(q, kk, vv)))
            s["max_abs_err"] = float((box["o"].double() - r).abs().max())
            res["wrong_path_dispatch"][f"{label}.{lay}"] = s
    xs = torch.randn(64, 4096, dtype=torch.bfloat16, device=DEV)
    res["flag_no_effect"] = {f"{label}.EVICT_FIRST={v}": seen(lambda f=f, v=v: f(xs, EVICT_FIRST=v))
                             for label, f in (("buggy", fe.softmax), ("twin", fe.softmax_fixed)) for v in (False, True)}
    res["flag_no_effect"]["ptx"] = evict_first_in_ptx(fe._softmax_kernel)
    g, u = (torch.randn(16, 1024, dtype=torch.float16, device=DEV) for _ in range(2))
    res["float_config_cells"] = {k: seen(lambda f=f: f(g, u)) for k, f in
                                 (("buggy", fc.silu_mul), ("twin", fc.silu_mul_fixed))}
    import toolchain as fx
    xf = torch.randn(4096, device=DEV)
    res["fixtures"] = {f"{label}.TWICE={v}": seen(lambda f=f, v=v: f(xf, TWICE=v))
                       for label, f in (("scale", fx.scale), ("scale_lost", fx.scale_lost)) for v in (False, True)}
    out = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out, "rung7_probe.json"), "w") as f:
        json.dump(res, f, indent=1)
    report(res)


def code(s: dict) -> str:
    return ",".join(f"{x['name']}:{x['how']}:{x['code'][:12]}:ptx={x['asm'].get('ptx', '-')[:8]}" for x in s["launches"])


def report(res: dict) -> None:
    for k, s in res["silent_fallback"].items():
        print(f"silent_fallback {k}: triton={names(s)} gpu={[g[:60] for g in s['gpu']]}")
    for k, s in res["wrong_path_dispatch"].items():
        print(f"wrong_path_dispatch {k}: triton={names(s)} gpu={s['gpu']} max_abs_err={s['max_abs_err']:.3g}")
    for k, s in res["flag_no_effect"].items():
        print(f"flag_no_effect {k}: {s if k == 'ptx' else code(s)}")
    for k, s in res["float_config_cells"].items():
        print(f"float_config_cells {k}: {[(x['name'], x['params']) for x in s['launches']]}")
    for k, s in res["fixtures"].items():
        print(f"fixture {k}: {code(s)}")
    fp = res["fingerprint"]
    print(f"fingerprint: device={fp['device']} driver={fp['driver']} cuda={fp['cuda']} triton={fp['triton']} "
          f"warnings={fp['warnings']}")


if __name__ == "__main__":
    main()
