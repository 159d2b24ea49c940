"""The contract, before any value: each output's dtype, shape and device against the spec
(as torch.testing does), and the number of outputs the kernel returned. A wrong dtype is a
contract failure with its own message, not a tolerance miss."""
from __future__ import annotations

from ..core.outcome import Check, Finding
from ..core.facts import ContractFacts


def contract(name: str, out, expect_shape, expect_dtype: str, expect_device: str) -> Finding | None:
    import torch
    if not isinstance(out, torch.Tensor):
        return Finding(Check.CONTRACT, name, facts=ContractFacts(not_tensor=type(out).__name__))
    problems = []
    if tuple(out.shape) != tuple(expect_shape):
        problems.append(["shape", list(out.shape), list(expect_shape)])
    if str(out.dtype).removeprefix("torch.") != expect_dtype:
        problems.append(["dtype", str(out.dtype).removeprefix("torch."), expect_dtype])
    if out.device.type != torch.device(expect_device).type:
        problems.append(["device", str(out.device), expect_device])
    return Finding(Check.CONTRACT, name, facts=ContractFacts(problems=problems)) if problems else None


def arity(spec, returned) -> Finding | None:
    """The kernel returned something the spec's outputs cannot be read from."""
    names = list(spec.returned)
    if len(names) <= 1 or isinstance(returned, dict):
        return None
    if isinstance(returned, (tuple, list)) and len(returned) == len(names):
        return None
    return Finding(Check.CONTRACT, ",".join(names), facts=ContractFacts(returned=type(returned).__name__, declared=names))
