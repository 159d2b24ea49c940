"""Rung 2's id kinds: the integer tensors whose range says they are ids (expert ids in
[0, E-1], slot indices, token positions), filled the way a router or a scheduler really
feeds them. A routing kernel is written for tokens spread over experts; it breaks when every
token goes to one expert, when an expert gets none, at the first and the last id, on ids
that come sorted or reversed. Each label is its own point; every value stays inside the
declared range, so a spec's invariants hold as they are. Never runs a kernel."""
from __future__ import annotations

KIND = "ids"
WHY = {
    "same": "every id the same (every token routed to one expert)",
    "distinct": "ids all distinct where the range allows (a permutation, cycled when there are more ids than values)",
    "ends": "only the lowest and the highest id (the first and the last expert)",
    "unused": "the highest id never used (the last expert gets no token)",
    "sorted": "ids in ascending order (pre-sorted tokens)",
    "reversed": "ids in descending order",
}
LABELS = tuple(f"{KIND}/{k}" for k in WHY)


def why(label: str) -> str:
    return WHY[label.partition("/")[2]]


def fill_ids(t, label: str, gen, rng: tuple | None) -> None:
    """Write id kind `label` ("ids/unused", ...) into the contiguous integer tensor `t`, over
    the whole tensor (flattened), within `rng` = (lo, hi), both inclusive."""
    import torch
    how = label.partition("/")[2]
    lo, hi = (int(rng[0]), int(rng[1])) if rng else (0, 63)
    hi = max(hi, lo)
    span, n, flat, dev = hi - lo + 1, t.numel(), t.view(-1), t.device
    if n == 0:
        return
    draw = lambda k: torch.randint(0, k, (n,), generator=gen, device=dev)
    if how == "same":
        vals = torch.full((n,), lo + int(draw(span)[0]), device=dev)
    elif how == "distinct":
        perm = torch.randperm(span, generator=gen, device=dev) if span <= 1 << 24 else draw(span)
        vals = lo + perm[torch.arange(n, device=dev) % perm.numel()]
    elif how == "ends":
        vals = torch.where(draw(2) == 0, lo, hi)
        vals[0], vals[-1] = lo, hi
    elif how == "unused":
        vals = lo + draw(max(span - 1, 1))       # never hi: the last expert, what `ids.max() + 1` sizing misses
    elif how == "":                                  # bare "ids" (an invariant's values=): uniform ids
        vals = lo + draw(span)
    elif how in ("sorted", "reversed"):
        vals = (lo + draw(span)).sort(descending=how == "reversed").values
    else:
        raise ValueError(f"unknown id kind {label!r}")
    flat.copy_(vals.to(t.dtype))
