"""One bug, cheap to climb (kladder's own fixture, for the CLI's failing-climb test): at N = 6
the kernel writes two elements past the end of its out-argument (faulty.py's write without
faulty.py's hang, crash and out-of-memory sizes); every other size is right."""
import torch

import kladder as kl


def scale(x, out):
    if x.shape[-1] == 6:
        flat = out.view(-1)
        wide = torch.as_strided(flat, (flat.numel() + 2,), (1,))   # two elements past the end
        wide.copy_(torch.cat([(2 * x).reshape(-1), torch.ones(2, dtype=x.dtype)]))
        return None
    out.copy_(2 * x)
    return None


spec = kl.Spec(
    "overrun",
    kernel=scale,
    reference=lambda x: 2 * x,
    args={"x": kl.Tensor("N", dtype="float32"), "out": kl.Out("N", like="x")},
    dims={"N": kl.Dim(1, 8, widths=[6])},
)
