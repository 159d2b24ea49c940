"""A row sum behind a launcher with state: the kind a decode loop calls every step.

The kernel adds each row's sum into a float32 workspace (several launches may add into one
workspace: a split reduction; here there is one). The launcher keeps a ring of SLOTS
workspaces, one a call, so that a step's result stays valid while the next steps run (an
engine that overlaps steps reads step t's buffer after step t + 1 has started), and hands the
caller a copy.

`RingRowsum(zero_each_call=False)` is the bug this folder's spec is there to catch: it zeroes a
workspace only when it allocates it, so from call SLOTS + 1 on, when the ring wraps, every call
adds its row sums onto what the slot held SLOTS calls before. Every test that makes fewer than
SLOTS calls in a process passes; a model's process makes thousands.
"""
import torch
import triton
import triton.language as tl

SLOTS = 256


@triton.jit
def _rowsum_kernel(x_ptr, ws_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.load(ws_ptr + row)                        # the workspace accumulates
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride + start + cols, mask=start + cols < N, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(ws_ptr + row, acc)


class RingRowsum:
    """rowsum(x) -> float32 [M], the sum of each row of x [M, N] (float32 or bfloat16)."""

    BLOCK = 128

    def __init__(self, zero_each_call: bool = True):
        self.zero_each_call = zero_each_call
        self.ring: dict[int, torch.Tensor] = {}
        self.step = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        x = x if x.stride(-1) == 1 else x.contiguous()
        M, N = x.shape
        slot = self.step % SLOTS
        self.step += 1
        ws = self.ring.get(slot)
        if ws is None or ws.shape[0] != M or ws.device != x.device:
            ws = self.ring[slot] = torch.zeros(M, dtype=torch.float32, device=x.device)
        elif self.zero_each_call:
            ws.zero_()                                 # the fix: a slot taken again starts from zero
        _rowsum_kernel[(M,)](x, ws, N, x.stride(0), BLOCK=self.BLOCK)
        return ws.clone()


rowsum = RingRowsum()                                  # what the library ships: one launcher per process
rowsum_forgets_to_zero = RingRowsum(zero_each_call=False)
