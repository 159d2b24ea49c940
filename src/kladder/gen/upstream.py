"""Point -> the backward's inputs (Spec.grads): an upstream gradient for every floating output
(the grad_output a training step hands the kernel's backward), in the output's dtype, and at
an accumulation point (mode "accumulate") the values `.grad` already holds from an earlier
micro-batch. Seeded by the point; runs no kernel.

The upstream gradient of output `y` is named `upstream y` in a point's values and layouts:
rung 2 chooses its value kind (UPSTREAM_KINDS), rung 3 its layout (UPSTREAM_LAYOUTS); every
other point draws it normal (a scalar output, a loss: 1.0) and contiguous. Why each:
- ones: the libraries' own tests (`out.sum().backward()`); a scalar loss's 1.0;
- sparse: exact zeros in most elements (a masked loss, ignored tokens): a backward that divides
  by, or skips on, the upstream gradient;
- huge: +-sqrt(max) of the dtype on a quarter of the elements (a large loss scale: products
  of two still fit); tiny: subnormals, the smallest normal and +-0 (an underflowing gradient);
- scaled: a scalar loss's gradient under a loss scaler (GradScaler's initial 2^16), and normal: a
  weighted loss (a backward that skips its multiply when handed 1.0 shows here);
- broadcast: `loss = out.sum()` hands the backward an expand-ed tensor (stride 0): a backward
  that assumes a contiguous grad_output reads past its one row;
- transposed: a grad_output laid out by a transposing consumer (its strides swapped)."""
from __future__ import annotations

import math

from .fill import fill_kind
from ..core.point import Point
from ..core.sizes import dtype_of, shape_of
from ..core.spec import FLOAT_DTYPES, Spec, upstream_name

UPSTREAM_SALT = 0x6A09E667
SEED_SALT = 0x3C6EF372
UPSTREAM_KINDS = ("ones", "sparse", "huge", "tiny")         # beside the default, normal
SCALAR_KINDS = ("scaled", "normal")                           # beside the default, 1.0
UPSTREAM_LAYOUTS = ("broadcast", "transposed")
SPARSE_ZEROS = 0.9                                            # the share of exact zeros of a sparse upstream gradient
LOSS_SCALE = 2.0 ** 16                                        # torch.amp.GradScaler's initial scale


def upstream(spec: Spec, point: Point, device) -> dict:
    """Output name -> its upstream gradient, for every floating output (an integer output has
    none: no gradient flows through it)."""
    import torch
    gen = torch.Generator(device=device).manual_seed((point.seed ^ UPSTREAM_SALT) & 0xFFFFFFFF)
    kinds, layouts = dict(point.values), dict(point.layouts)
    found = {}
    for out in spec.outputs:
        dtype = dtype_of(spec, out, point.dtype_of)
        if dtype not in FLOAT_DTYPES:
            continue
        key = upstream_name(out)
        vals = torch.empty(shape_of(spec, out, point.sizes), dtype=getattr(torch, dtype), device=device)
        # a loss (a scalar) is handed 1.0 unless a point says otherwise: what training hands it
        fill_upstream(vals, kinds.get(key, "normal" if vals.dim() else "ones"), dtype, gen)
        found[out] = laid_out(vals, layouts.get(key, ""))
    return found


def fill_upstream(t, kind: str, dtype: str, gen) -> None:
    import torch
    if kind == "huge":
        # +-sqrt(max) on a quarter of the elements: the product of two such still fits the dtype.
        # Not the dtype's max itself: a gradient of 65504 in float16 overflows any backward (a
        # loss scaler then skips the step), which is training's contract, not a kernel's bug
        fill_kind(t, "normal", dtype, gen)
        big = torch.finfo(t.dtype).max ** 0.5
        pick = torch.rand(t.shape, generator=gen, device=t.device) < 0.25
        sign = torch.where(torch.rand(t.shape, generator=gen, device=t.device) < 0.5, -1.0, 1.0)
        t.copy_(torch.where(pick, (sign * big).to(t.dtype), t))
    elif kind == "scaled":
        # 2^16, or in float16 (max 65504) 2^15: a scaled loss's gradient the dtype can hold
        fill_kind(t, "ones", dtype, gen)
        t.mul_(min(LOSS_SCALE, 2.0 ** math.floor(math.log2(torch.finfo(t.dtype).max))))
    elif kind == "sparse":
        fill_kind(t, "normal", dtype, gen)
        keep = torch.rand(t.shape, generator=gen, device=t.device) >= SPARSE_ZEROS
        t.mul_(keep.to(t.dtype))
    else:
        fill_kind(t, kind, dtype, gen)


def laid_out(vals, layout: str):
    """`vals` in `layout`: broadcast -> its first row expand-ed over the first dim (stride 0),
    transposed -> the same values in a storage whose last two dims are swapped."""
    import torch
    if layout == "broadcast" and vals.dim() >= 1:
        return vals[:1].expand_as(vals)
    if layout == "transposed" and vals.dim() >= 2:
        store = torch.empty(vals.shape[:-2] + (vals.shape[-1], vals.shape[-2]), dtype=vals.dtype, device=vals.device)
        view = store.transpose(-1, -2)
        view.copy_(vals)
        return view
    return vals


def held(spec: Spec, point: Point, device) -> dict:
    """Input name -> what its `.grad` holds before the call at an accumulation point (an earlier
    micro-batch's gradient): normal values, in the input's dtype."""
    import torch
    gen = torch.Generator(device=device).manual_seed((point.seed ^ SEED_SALT) & 0xFFFFFFFF)
    found = {}
    for name in spec.grads:
        dtype = dtype_of(spec, name, point.dtype_of)
        t = torch.empty(shape_of(spec, name, point.sizes), dtype=getattr(torch, dtype), device=device)
        fill_kind(t, "normal", dtype, gen)
        found[name] = t
    return found
