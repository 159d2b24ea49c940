"""A hash of each output's bytes, taken in the worker where the output is in hand (the parent
only sees the outcome): the history compares them between climbs ("the bits changed") and
golden hashes keep them for a (device, toolchain). sha256 over the dtype, the shape and the
raw bytes in row-major order; copied to the host in slices of CHUNK bytes, so that a 4 GiB
output on a GPU never needs 4 GiB of host memory at once."""
from __future__ import annotations

import hashlib

CHUNK = 1 << 26          # 64 MiB a copy to the host
# Outputs past this are not hashed: sha256 runs on the host at ~0.6 GB/s with the copies (the H200,
# docs/results/2026-12-02-h200-session5: 7.3 s for a 4 GiB output, kladder's own time at every
# big point). The history and golden hashes then hold nothing for that output (never a partial
# hash: "bits equal" must mean every bit).
LIMIT = 1 << 29          # 512 MiB


def output_hash(t) -> str | None:
    """The sha256 (hex, first 32 digits) of tensor `t`'s dtype, shape and bytes; None for what
    is not a tensor (a mode's None; a Python number is hashed by its repr) and for a tensor of
    more than LIMIT bytes."""
    import torch
    if isinstance(t, (int, float, bool)):
        return hashlib.sha256(repr(t).encode()).hexdigest()[:32]
    if not isinstance(t, torch.Tensor) or t.numel() * t.element_size() > LIMIT:
        return None
    h = hashlib.sha256(f"{t.dtype}:{tuple(t.shape)}:".encode())
    flat = t.detach().contiguous().reshape(-1)
    if flat.numel() and flat.stride(-1) != 1:
        # a one-element tensor counts as contiguous at any stride (a column of a (1, 2) view):
        # its bytes need stride 1 to be read as bytes
        flat = flat.clone(memory_format=torch.contiguous_format)
    if flat.numel():
        raw = flat.view(torch.uint8)
        for a in range(0, raw.numel(), CHUNK):
            h.update(raw[a:a + CHUNK].cpu().numpy())            # the buffer itself, no bytes copy
    return h.hexdigest()[:32]


def output_hashes(outputs: dict, into: dict) -> None:
    """Each output's hash into `into`, the first call's for each name (a mode's later calls
    run on other inputs or states: the point's bits are its first call's)."""
    for name, t in outputs.items():
        if name not in into:
            try:
                digest = output_hash(t)
            except Exception:  # noqa: BLE001 - a tensor whose bytes cannot be read as bytes (sparse, quantized, ...): no
                continue       # hash; the history's metadata must never turn into a point's error
            if digest is not None:
                into[name] = digest
