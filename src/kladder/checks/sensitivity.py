"""How much each output moves when its inputs are rounded: the scale a kernel's rounding
errors really have where the output cancels (a dot product that cancels to 0.22 carries the
rounding of terms of size ~85). Pure functions on inputs and outputs; the reference itself is
called by the harness."""
from __future__ import annotations

SENSITIVITY_EPS = 2.0 ** -20
SENSITIVITY_DRAWS = 3


def perturbed(ref_args: list, seed: int) -> list[list]:
    """SENSITIVITY_DRAWS copies of the reference's inputs, every float input scaled by
    (1 + eps * r), r = +-1 at random. One draw can cancel to near zero by chance where the
    output itself cancels (a D = 1 attention row: 8% of draws land under a tenth of the
    typical size); the RMS over three rarely does (under 0.1%)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    draws = []
    for _ in range(SENSITIVITY_DRAWS):
        bumped = []
        for a in ref_args:
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                signs = torch.randint(0, 2, a.shape, generator=gen).to(device=a.device, dtype=a.dtype) * 2 - 1
                a = a * (1 + SENSITIVITY_EPS * signs)
            bumped.append(a)
        draws.append(bumped)
    return draws


def sensitivity(ref, bumped):
    """RMS over the draws of |bumped - ref| / eps (`bumped`: one tensor per draw)."""
    import torch
    draws = bumped if isinstance(bumped, list) else [bumped]
    if not (isinstance(ref, torch.Tensor) and ref.is_floating_point()) or not all(isinstance(b, torch.Tensor) for b in draws):
        return None
    sq = sum(((b.to(ref.dtype) - ref) / SENSITIVITY_EPS) ** 2 for b in draws)
    return (sq / len(draws)).sqrt()
