"""plan_cache_restart: the launcher persists its launch plans next to Triton's cache so that a
restarted server skips the planning, but the file is keyed by dtype alone while a plan depends
on the row length; after a restart, a row length that the last process did not plan last gets
another length's plan.

y = x / sqrt(mean(x^2) + eps) * w, row by row, one program per row, each row walked in
NUM_TILES tiles of BLOCK_N columns (the same kernel as stale_state). In a process, plans are
kept per (N, dtype) and are right. On disk (TRITON_CACHE_DIR/rmsnorm_plans.json) each new plan
is written under its dtype, the last one winning; at import the file is read back and a row
length with no plan in memory takes the file's plan for its dtype.
"""
import json
import os

import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs
from kladder.zoo._rmsnorm import base, rmsnorm_ref  # noqa: F401  (rmsnorm_ref: the cases' reference, by its old name)

CASE = dict(
    name="plan_cache_restart",
    gap="execution modes",
    rung=4,
    mirrors="fresh vs warm JIT cache gap (reference/003 §06: caches keyed by less than what changes the code)",
    needs="cpu",
    story=(
        "rmsnorm plans its launch (BLOCK_N and the tiles per row) per row length, and, so that a "
        "restarted server skips the planning, writes each plan into the directory Triton's cache "
        "uses when a deployment sets TRITON_CACHE_DIR. The file is keyed the way Triton keys its own "
        "binaries, by the argument types, so by dtype; but a plan depends on the row length. In a "
        "process every plan is made for its own length and is right, so every eager test, every "
        "A-B-A sequence and every shape of the unit test pass; the cache file only matters after a "
        "restart: the next process reads it at import and gives a length it has not planned yet the "
        "plan of whatever length was planned last, by any process. After a process that ran N = 65 "
        "and then N = 64, a restarted process runs N = 65 with one 64-column tile: the last column "
        "is never written (torch.empty's bytes come back). Rung 4's jitcache mode catches it: a "
        "process on an empty cache directory runs A then B, a second process on the cache it left "
        "runs A, and A must be right and bit-for-bit equal in both. No other rung sees it: without "
        "TRITON_CACHE_DIR the launcher keeps no file, and within one process the plans are right."
    ),
)

MAX_BLOCK_N = 1024


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, num_tiles,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for t in range(num_tiles):
        cols = t * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
    for t in range(num_tiles):
        cols = t * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def _make_plan(N):
    block = min(triton.next_power_of_2(N), MAX_BLOCK_N)
    return {"BLOCK_N": block, "num_tiles": triton.cdiv(N, block)}


class PlanCache:
    """Plans per (N, dtype) in memory; persisted to TRITON_CACHE_DIR when one is set."""

    def __init__(self, filename, disk_key):
        self.filename, self.disk_key = filename, disk_key
        self.memory = {}
        self.disk = self._read()                 # what the last process left, read once at import

    def _path(self):
        d = os.environ.get("TRITON_CACHE_DIR")
        return os.path.join(d, self.filename) if d else None

    def _read(self):
        path = self._path()
        if path and os.path.exists(path):
            with open(path) as f:
                return json.load(f)
        return {}

    def plan(self, N, dtype):
        key = (N, dtype)
        if key not in self.memory:
            saved = self.disk.get(self.disk_key(N, dtype))
            self.memory[key] = saved or _make_plan(N)
            self._write(N, dtype, self.memory[key])
        return self.memory[key]

    def _write(self, N, dtype, plan):
        path = self._path()
        if not path:
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        on_disk = self._read()
        on_disk[self.disk_key(N, dtype)] = plan
        with open(path, "w") as f:
            json.dump(on_disk, f)


# The bug: the file's key is the dtype alone, as Triton keys binaries by argument types.
_PLANS = PlanCache("rmsnorm_plans.json", lambda N, dtype: str(dtype))
# The fix: the key holds everything the plan depends on.
_PLANS_FIXED = PlanCache("rmsnorm_plans_v2.json", lambda N, dtype: f"{dtype}:{N}")


def _launch(x, w, eps, plan):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    w = w.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    _rmsnorm_kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), eps, plan["num_tiles"], BLOCK_N=plan["BLOCK_N"])
    return y


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    return _launch(x, w, eps, _PLANS.plan(x.shape[1], x.dtype))


def rmsnorm_fixed(x, w, eps=1e-6):
    return _launch(x, w, eps, _PLANS_FIXED.plan(x.shape[1], x.dtype))


def make_spec(kernel):
    import kladder as kl
    return base().derive(
        name="rmsnorm_plan_cache",
        kernel=kernel,
        dims={"M": kl.Dim(1, 4096),
              "N": kl.Dim(1, 16384, tile=32, widths=[128, 2880, 4096])},
    )


spec, fixed = build_specs(make_spec, rmsnorm, rmsnorm_fixed)
