"""Padding poison: packed rows carry valid elements and padding (reference/001: 14 valid scale
bytes, 16 read). The kernel is called twice on the same valid data: with zero padding (what a
unit test builds) and with the padding poisoned (0xFF, 0x7F, 0x80, a per-byte pattern, random
bytes). The outputs must stay bit for bit the same, and the poisoned call is checked against
the reference as usual."""
from __future__ import annotations

import dataclasses


class Padding:
    name = "padding"

    def run(self, h) -> tuple[list, str]:
        import torch

        from ..compare import Finding, Where, describe_pattern
        from . import bits_differ
        pt = h.point
        (arg, fill), = [(n, k) for n, k in pt.values if k.startswith("pad:")]
        clean_pt = dataclasses.replace(pt, values=tuple((n, "pad:0x00" if n == arg else k) for n, k in pt.values))
        clean = h.prepare(point=clean_pt, seed=pt.seed)
        base_ret = h.call(clean, "call with zero padding")
        base_out, _ = h.outputs(clean, base_ret)
        base_out = {n: t.clone() for n, t in base_out.items() if isinstance(t, torch.Tensor)}
        prep = h.prepare()
        label = f"call with {arg}'s padding {fill.removeprefix('pad:')}"
        ret = h.call(prep, label)
        findings = h.check(prep, ret, label)
        out, _ = h.outputs(prep, ret)
        for name, before in base_out.items():
            after = out.get(name)
            if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
                continue
            differ = bits_differ(after, before)
            n = int(differ.sum())
            if n:
                symbols = h.spec.all_tensors[name].symbols
                pattern = describe_pattern(differ, Where(symbols, {d: h.spec.dims[d].tiles for d in symbols if d in h.spec.dims}))
                findings.append(Finding("padding", name, f"`{name}` changed when only {arg}'s padding bytes changed "
                                        f"(zero -> {fill.removeprefix('pad:')}): {n:,} of {differ.numel():,} elements differ, "
                                        f"{pattern}; the kernel reads past the {h.spec.all_tensors[arg].valid} valid elements",
                                        pattern=pattern, mismatched=n, total=differ.numel(), call=label))
        return findings, ""
