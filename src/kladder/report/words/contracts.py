"""The words of the contracts (rung 3 and every call's own): outputs of the wrong kind, guard
bytes overwritten, inputs changed, a reference that runs the kernel."""
from __future__ import annotations

from ...core.facts import AllocatedFacts, ContractFacts, GuardFacts, InputChangedFacts, InvalidReferenceFacts
from .base import pattern_text, says


@says(ContractFacts)
def _contract(f, x: ContractFacts) -> str:
    if x.not_tensor is not None:
        return f"`{f.output}` is a {x.not_tensor}, not a tensor"
    if x.returned is not None:
        names = x.declared
        return f"the kernel returned {x.returned}; the spec declares {len(names)} outputs ({', '.join(names)})"
    if x.reference_shape is not None:
        return (f"the reference returned shape {tuple(x.reference_shape)} for `{f.output}`, "
                f"the kernel {tuple(x.kernel_shape)}")
    parts = [f"{what} {_shown(got)} where {_shown(want)} was expected" for what, got, want in x.problems]
    return f"`{f.output}` has " + " and ".join(parts)


def _shown(v):
    return tuple(v) if isinstance(v, list) else v


@says(GuardFacts)
def _guard(f, x: GuardFacts) -> str:
    parts, size = [], x.itemsize
    what, own = _guarded_what(f, x.allocated)
    if x.n_after:
        a, b = x.after_lo, x.after_hi
        parts.append(f"{x.n_after} guard bytes after the end of {what} were overwritten "
                     f"(bytes {a}..{b} past the end: elements {a // size}..{b // size} past the last)")
    if x.n_before:
        parts.append(f"{x.n_before} guard bytes before the start of {what} were overwritten "
                     f"(bytes {x.before_lo}..{x.before_hi} before it)")
    return "; ".join(parts) + own


def _guarded_what(f, alloc: AllocatedFacts | None) -> tuple[str, str]:
    """The guarded tensor's name, and for one the kernel allocated itself, how it did."""
    if alloc is None:
        return f"`{f.output}`", ""
    made = f" (the kernel allocated it with torch.{alloc.op}: {tuple(alloc.shape)} {alloc.dtype})"
    if alloc.returned:
        return f"`{f.output}`", made
    return f"the kernel's scratch allocation torch.{alloc.op} {tuple(alloc.shape)} {alloc.dtype}", ""


@says(InputChangedFacts)
def _input_changed(f, x: InputChangedFacts) -> str:
    if x.resized is not None:
        was, now = x.resized
        return (f"the kernel changed its input `{f.output}` from shape {tuple(was)} to {tuple(now)}, or its dtype; the "
                "spec declares no mutation")
    parts = []
    if f.mismatched:
        unit = "rows" if x.how == "hash" else "elements"
        where = f" ({pattern_text(f.pattern)})" if f.pattern is not None else ""
        parts.append(f"{f.mismatched:,} of {f.total:,} {unit}{where}")
    if x.gap_bytes:
        parts.append(f"{x.gap_bytes:,} bytes between its elements (memory a strided view's parent owns)")
    hashed = (f"; {x.slabs} of {x.of} slabs of rows hashed before the call differ after it" if x.how == "hash"
              else "")
    if x.declared == "gradient":
        return (f"the kernel's backward wrote `{f.output}` as the spec declares, but {' and '.join(parts)} hold neither "
                f"its data as passed nor a gradient (the kernel's own gradient bit for bit, or the reference's within "
                "the tolerance): a write by design must leave the gradient it promises")
    fix = ("kl.Tensor(..., grad_overwritten=True) on the output if the backward overwrites it by design" if x.upstream
           else "kl.Tensor(..., mutated=True) if the kernel writes it by design; a dict of configs or a predicate of "
                "the point if only some points do; 'backward' if its backward writes its gradient there")
    return (f"the kernel changed its input `{f.output}`: {' and '.join(parts)} differ from what it was passed{hashed}; "
            f"the spec declares no mutation ({fix})")


@says(InvalidReferenceFacts)
def _invalid_reference(f, x: InvalidReferenceFacts) -> str:
    what = "; ".join(s for s in (x.functions and f"functions {', '.join(x.functions)}",
                                 x.gpu_kernels and f"GPU kernels {', '.join(x.gpu_kernels)}") if s)
    return (f"the reference runs the kernel under test ({what}); a comparison with it cannot fail when both are wrong. "
            "Write the reference in plain torch, independent of the kernel's code")
