"""Issue 38 on a GPU: reference independence by ownership, not by names (items 3 and 4).

1. The MoE twin (bench/specs/moe_twin.py: a Triton launcher with torch.bincount, a float64
   index_add_ reference with torch.bincount) climbs rung 3 on CUDA: both run ATen's histogram
   kernel, which is torch's, not the kernel under test, so every point passes (exit 0); the script
   also prints the GPU kernels the launcher's call ran, each with the op that launched it (the
   profiler's attribution the check relies on: kernelHistogram1D under aten::bincount, the Triton
   kernel under none).
2. The zoo's shared_kernel_reference (its reference is the library's other entry point: the same
   Triton kernel) climbs rung 3 on CUDA: its independence point is BROKEN, naming the reference and
   the shared Triton kernel (_rmsnorm_kernel, as a Triton launch and as a GPU kernel no torch op
   launched); no point FAILED; its twin passes rung 3.
3. A torch op under test (torch.sin) with the same op as its reference is BROKEN (the torch op
   under test, sin); with an independent reference (cos(x - pi/2)) it passes, though both run
   ATen's elementwise kernels.

Passes (exit 0) when all three hold; prints one line each and writes --json.

usage: python bench/shared_gpu.py [--json PATH] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MOE = os.path.join(HERE, "specs", "moe_twin.py")


def strict_json(path: str):
    def refuse(c):
        raise ValueError(f"non-strict JSON constant {c}")
    with open(path) as f:
        return json.loads(f.read(), parse_constant=refuse)


def climb(args: list[str], out: str) -> tuple[int, dict, str]:
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", *args, "--device", "cuda", "--json", out, "--no-history"],
                       capture_output=True, text=True, timeout=3600)
    doc = strict_json(out) if os.path.exists(out) else {}
    return p.returncode, doc, p.stdout[-4000:] + p.stderr[-2000:]


def rung3(doc: dict) -> list[dict]:
    return next((r["points"] for r in doc.get("rungs", []) if r["rung"] == 3), [])


def moe_twin(folder: str) -> dict:
    code, doc, text = climb(["climb", f"{MOE}::spec", "--rungs", "3"], os.path.join(folder, "moe.json"))
    pts = rung3(doc)
    bad = [(p["id"], p["status"], p.get("reason") or p.get("failure")) for p in pts if p["status"] != "passed"]
    return {"ok": code == 0 and bool(pts) and not bad, "exit": code, "points": len(pts), "not_passed": bad,
            "owners": owners(), "tail": "" if code == 0 else text}


def owners() -> dict:
    """The GPU kernels the MoE launcher's call ran, each with the op that launched it."""
    sys.path.insert(0, os.path.dirname(MOE))
    import torch

    import moe_twin
    from kladder.run.modes.tracing import gpu_kernels
    x = torch.randn(64, 128, device="cuda")
    ids = torch.randint(0, 8, (64,), device="cuda")
    w = torch.randn(8, 128, 96, device="cuda")
    return gpu_kernels(lambda: moe_twin.routed_matmul(x, ids, w), owners=True)


def shared_reference(folder: str) -> dict:
    code, doc, text = climb(["zoo", "climb", "shared_kernel_reference", "--rungs", "3"], os.path.join(folder, "skr.json"))
    pts = rung3(doc)
    broken = [p for p in pts if p["status"] == "broken"]
    failed = [p["id"] for p in pts if p["status"] == "failed"]
    facts = broken[0]["note"]["facts"] if broken else {}
    shared = facts.get("jit_kernels", []) + facts.get("gpu_kernels", [])
    fcode, fdoc, _ = climb(["zoo", "climb", "shared_kernel_reference", "--fixed", "--rungs", "3"],
                           os.path.join(folder, "skr_fixed.json"))
    ok = (code == 1 and len(broken) == 1 and broken[0]["note"]["kind"] == "reference_not_independent"
          and any("_rmsnorm_kernel" in s for s in shared) and not failed and fcode == 0)
    return {"ok": ok, "exit": code, "broken": [p["id"] for p in broken], "facts": facts, "failed": failed,
            "reason": broken[0].get("reason") if broken else None, "twin_exit": fcode}


def torch_op() -> dict:
    import dataclasses

    import torch

    import kladder as kl
    from kladder.gen.gaps import contracts
    from kladder.run.trial import run_point
    from kladder.core.sizes import GPU_BUDGET

    def spec(reference):
        return kl.Spec("sin", kernel=torch.sin, reference=reference, args={"x": kl.Tensor("N", dtype="float32")},
                       returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 1 << 16)})
    same, other = spec(lambda x: x.sin()), spec(lambda x: torch.cos(x - torch.pi / 2))
    p = next(p for p in contracts.points(same, GPU_BUDGET) if p.kind == "independence")
    p = dataclasses.replace(p, dims=(("N", 4096),))
    a, b = run_point(same, p, "cuda").outcome, run_point(other, p, "cuda").outcome
    ok = (a.status == "broken" and a.note.facts.torch_op == "sin" and b.status == "passed")
    return {"ok": ok, "same_op": [str(a.status), a.note.to_dict() if a.note else None],
            "independent": [str(b.status), b.note.to_dict() if b.note else None]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--keep")
    args = ap.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="kladder-shared-gpu-")
    os.makedirs(folder, exist_ok=True)
    import torch
    result = {"device": torch.cuda.get_device_name(), "moe_twin": moe_twin(folder),
              "shared_kernel_reference": shared_reference(folder), "torch_op": torch_op()}
    for name in ("moe_twin", "shared_kernel_reference", "torch_op"):
        r = result[name]
        print(f"{name}: {'OK' if r['ok'] else 'FAILED'}  " + json.dumps({k: v for k, v in r.items() if k != "ok"})[:1500])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=str)
    return 0 if all(result[n]["ok"] for n in ("moe_twin", "shared_kernel_reference", "torch_op")) else 1


if __name__ == "__main__":
    sys.exit(main())
