"""One point, in the current process: materialise, execute, compare, check the guards.

This runs inside a worker (isolate.py); it returns an Outcome and never prints. Whether the
process survives the point (a device fault poisons it) is said by `fatal` on the result.
A Harness holds the three steps (prepare, call, check); each execution mode (execute/)
sequences them its own way: once (eager), twice on reused buffers, A-B-A, graph replays."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from . import execute
from .compare import (Finding, Where, bias_check, bumped_reference, check_contract, check_guards, compare_values,
                      describe_pattern, sensitivity)
from .materialize import Inputs, materialize, reference_args
from .outcome import BROKEN, FAILED, OOM, PASSED, Outcome
from .point import Point
from .sizes import ITEMSIZE, dtype_of, nbytes_of, shape_of
from .spec import Spec

# The CUDA runtime's words for a sticky error: after one of these every later call in the
# process fails, so the worker that saw it must be replaced.
DEVICE_FAULT_WORDS = ("illegal memory access", "misaligned address", "unspecified launch failure",
                      "device-side assert", "illegal instruction", "an illegal", "CUDA error: unknown error")
SAMPLED_ROWS = 64


@dataclass
class Result:
    outcome: Outcome
    fatal: bool = False


class KernelError(Exception):
    """The kernel raised during a call; `label` says which call ("replay 2 of 3")."""

    def __init__(self, error: BaseException, label: str):
        super().__init__(str(error))
        self.error, self.label = error, label


class SpecBroken(Exception):
    """The inputs could not be built or the reference raised: not the kernel's fault."""


class Skip(Exception):
    """A mode that does not apply to this spec or device, with the reason."""


@dataclass
class Prepared:
    point: Point
    inputs: Inputs
    ref_args: list
    select: dict
    row_ids: list
    rows_text: str


class Harness:
    def __init__(self, spec: Spec, point: Point, device: str):
        self.spec, self.point, self.device = spec, point, device
        self.warnings: list[str] = []

    def prepare(self, point: Point | None = None, seed: int | None = None, outs_from: Prepared | None = None) -> Prepared:
        """Seeded inputs in guarded buffers and the reference's copies, taken before the call.
        With `outs_from`, Out args reuse that call's buffers as they are (not re-poisoned)."""
        pt = point or self.point
        if seed is not None:
            pt = dataclasses.replace(pt, seed=seed)
        try:
            inputs = materialize(self.spec, pt, self.device, reuse=outs_from.inputs if outs_from else None)
            select, row_ids, text = plan_rows(self.spec, pt, inputs.args, self.device)
            ref_args = reference_args(self.spec, inputs, {i: v for i, v in select.items() if isinstance(i, int)})
        except Exception as e:  # noqa: BLE001 - every failure here is kladder's or the spec's
            if _is_oom(e):
                raise
            raise SpecBroken(f"building the inputs failed: {type(e).__name__}: {e}") from e
        return Prepared(pt, inputs, ref_args, select, row_ids, text)

    def call(self, prep: Prepared, label: str = "", runner=None):
        """One call of the kernel (through `runner`, the executor's, when given)."""
        try:
            if runner is not None:
                return runner(self.spec.kernel, prep.inputs.args, prep.point.kwargs)
            return execute.call_once(self.spec.kernel, prep.inputs.args, prep.point.kwargs)
        except Exception as e:  # noqa: BLE001 - the kernel's own exception is a finding
            raise KernelError(e, label) from e

    def outputs(self, prep: Prepared, returned) -> tuple[dict, list[Finding]]:
        return _collect(self.spec, prep.inputs, returned)

    def check(self, prep: Prepared, returned, label: str = "") -> list[Finding]:
        """Guards, contract, NaN-aware values against the reference, each finding labelled."""
        spec, pt = self.spec, prep.point
        findings = _guard_findings(spec, prep.inputs, pt)
        outputs, contract = _collect(spec, prep.inputs, returned)
        findings += contract
        try:
            refs = _split_ref(spec, spec.reference(*prep.ref_args))
            draws = [_split_ref(spec, b) for b in bumped_reference(spec.reference, prep.ref_args, pt.seed)]
            bumped = {n: [d.get(n) for d in draws] for n in refs}
        except Exception as e:  # noqa: BLE001
            if _is_oom(e):
                raise                                # the point could not run for memory: not the spec's fault
            raise SpecBroken(f"the reference raised {type(e).__name__}: {_first_line(e)} "
                             "(a spec problem, not a kernel failure)") from e
        sens = {n: sensitivity(refs[n], bumped.get(n)) for n in refs}
        policy = spec.nonfinite if any(k == "nonfinite" for _, k in pt.values) else None
        if policy == "raise":
            findings.append(Finding("nonfinite", "", "the kernel accepted NaN/Inf inputs and returned; the spec's "
                                    "policy is nonfinite='raise'", pattern="accepted NaN/Inf"))
        findings += _compare_outputs(spec, pt, self.device, outputs, refs, prep.select, prep.row_ids, sens, policy,
                                     self.warnings if pt.rung <= 3 else None)
        if pt.rung <= 3:
            findings += _check_invariants(spec, pt, prep, outputs)
        return label_all(findings, label)


def label_all(findings: list[Finding], label: str) -> list[Finding]:
    for f in findings:
        f.call = f.call or label
    return findings


def run_point(spec: Spec, point: Point, device: str) -> Result:
    t0 = time.perf_counter()
    result = _run(spec, point, device)
    result.outcome.seconds = time.perf_counter() - t0
    return result


def _is_oom(e: BaseException) -> bool:
    import torch
    return isinstance(e, (MemoryError, torch.OutOfMemoryError)) or "out of memory" in str(e).lower()


def _is_device_fault(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e}"
    return "AcceleratorError" in text or any(w in text for w in DEVICE_FAULT_WORDS)


def _run(spec: Spec, point: Point, device: str) -> Result:
    h = Harness(spec, point, device)
    try:
        findings, rows_text = execute.run_mode(point.mode, h)
    except Skip as e:
        return Result(Outcome(point, "skipped", reason=str(e)))
    except SpecBroken as e:
        return Result(Outcome(point, BROKEN, reason=str(e)))
    except KernelError as k:
        e, where = k.error, (f" ({k.label})" if k.label else "")
        if point.layouts and not _is_device_fault(e) and not _is_oom(e):
            # refusing a layout loudly is allowed; reading the wrong elements silently is not
            return Result(Outcome(point, "skipped", reason=f"refused: the kernel raised {type(e).__name__} on this layout: {_first_line(e)}"))
        if spec.nonfinite == "raise" and any(kd == "nonfinite" for _, kd in point.values) and not _is_device_fault(e):
            return Result(Outcome(point, PASSED, reason=f"raised {type(e).__name__} on NaN/Inf inputs, as the spec's policy asks"))
        if _is_oom(e):
            return Result(Outcome(point, OOM, reason=f"the kernel ran out of memory{where}: {e}"))
        if k.label == "capture":
            # a failed capture can leave the context unusable: the worker is replaced as after a fault
            return Result(Outcome(point, FAILED, [Finding("capture", "", f"the kernel cannot be captured in a CUDA graph: {type(e).__name__}: {_first_line(e)}", pattern="capture failed", call=k.label)]), fatal=True)
        if _is_device_fault(e):
            return Result(Outcome(point, FAILED, [Finding("device_fault", "", f"the kernel faulted the device{where}: {type(e).__name__}: {_first_line(e)}", pattern="device fault", call=k.label)]), fatal=True)
        return Result(Outcome(point, FAILED, [Finding("raised", "", f"the kernel raised {type(e).__name__}{where}: {_first_line(e)}", pattern="raised", call=k.label)]))
    except Exception as e:  # noqa: BLE001 - OOM while preparing, or a fault outside the call
        if _is_oom(e):
            return Result(Outcome(point, OOM, reason=f"the inputs or the reference ran out of memory: {_first_line(e)}"))
        if _is_device_fault(e):
            return Result(Outcome(point, FAILED, [Finding("device_fault", "", f"the device faulted: {type(e).__name__}: {_first_line(e)}", pattern="device fault")]), fatal=True)
        raise
    # executors return a note beside their findings: the rows checked (big points), or what
    # the mode measured (the model's scores, the cache's files)
    rows, note = (rows_text, "") if point.kind == "big" else ("", rows_text)
    return Result(Outcome(point, FAILED if findings else PASSED, findings, reason=note, rows_checked=rows,
                          warnings=h.warnings))


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else ""


def _guard_findings(spec: Spec, inputs, point: Point) -> list[Finding]:
    out = []
    for name, g in inputs.guarded.items():
        before, after = g.damaged()
        f = check_guards(name, before, after, ITEMSIZE[dtype_of(spec, name, point.dtype_of)])
        if f:
            out.append(f)
    return out


def _collect(spec: Spec, inputs, returned) -> tuple[dict, list[Finding]]:
    """Outputs by name: Out args from their buffers, returned tensors from the return value."""
    outputs = dict(inputs.outs)
    names = list(spec.returned)
    if not names:
        return outputs, []
    if len(names) == 1:
        values = [returned]
    elif isinstance(returned, dict):
        values = [returned.get(n) for n in names]
    elif isinstance(returned, (tuple, list)) and len(returned) == len(names):
        values = list(returned)
    else:
        return outputs, [Finding("contract", ",".join(names), f"the kernel returned {type(returned).__name__}; "
                                 f"the spec declares {len(names)} outputs ({', '.join(names)})")]
    outputs.update(zip(names, values))
    return outputs, []


def _split_ref(spec: Spec, ref) -> dict:
    names = list(spec.outputs)
    if len(names) == 1:
        return {names[0]: ref}
    if isinstance(ref, dict):
        return ref
    return dict(zip(names, ref))


def _interpreted(device: str) -> bool:
    """Triton's interpreter (3.9) converts float32 to bfloat16 by truncation, not to nearest
    as a GPU does: every bfloat16 output would lean toward zero, the interpreter's bias and not
    the kernel's. The bias check is left to the GPU for bfloat16 outputs."""
    import os
    return device == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"


def _check_invariants(spec: Spec, point: Point, prep: Prepared, outputs: dict) -> list[Finding]:
    """Each invariant that applies here: those without values everywhere, those with values
    where the point gives the inputs those values."""
    import torch
    findings = []
    given = dict(point.values)
    inputs = {n: a for n, a in zip(spec.args, prep.inputs.args) if n not in spec.out_args}
    for inv in spec.invariants:
        if inv.values and any(given.get(a) != k for a, k in inv.values.items()):
            continue
        try:
            held = inv.check(inputs, outputs)
        except Exception as e:  # noqa: BLE001
            raise SpecBroken(f"the invariant '{inv.name}' raised {type(e).__name__}: {_first_line(e)}") from e
        if isinstance(held, torch.Tensor) and held.numel() > 1:
            bad = ~held.to(torch.bool)
            n_bad = int(bad.sum())
            if n_bad:
                pattern = describe_pattern(bad, Where())
                findings.append(Finding("invariant", inv.name, f"the invariant '{inv.name}' fails at {n_bad:,} of "
                                        f"{bad.numel():,} positions: {pattern}", pattern=pattern, mismatched=n_bad, total=bad.numel()))
        elif not bool(held):
            findings.append(Finding("invariant", inv.name, f"the invariant '{inv.name}' does not hold", pattern="invariant"))
    return findings


def _compare_outputs(spec, point, device, outputs, refs, select, where_rows, sens, policy=None, warnings=None) -> list[Finding]:
    findings = []
    for name in spec.outputs:
        dtype = dtype_of(spec, name, point.dtype_of)
        shape = shape_of(spec, name, point.sizes)
        out = outputs.get(name)
        bad = check_contract(name, out, shape, dtype, device)
        if bad:
            findings.append(bad)
            continue
        sel = select.get(("out", name))
        if sel is not None:
            out = out.index_select(*sel)
        symbols = spec.all_tensors[name].symbols
        where = Where(symbols, {d: spec.dims[d].tiles for d in symbols if d in spec.dims},
                      {sel[0]: where_rows} if sel is not None else {})
        describe = f"{dtype}, {' x '.join(map(str, shape))}, {point.mode}"
        f = compare_values(name, out, refs[name], spec.tolerance_for(dtype), where, describe, sens.get(name), policy)
        if f:
            findings.append(f)
        elif warnings is not None and not (dtype == "bfloat16" and _interpreted(device)):
            w = bias_check(name, out, refs[name])
            if w and w not in warnings:
                warnings.append(w)
    return findings


# ---------------------------------------------------------------------------- big points
def plan_rows(spec: Spec, point: Point, args: list, device: str):
    """For a big point with independent rows declared: the rows around every boundary (the
    first tile, the tiles where each tensor crosses 2^31 and 2^32 bytes, the last tile) and a
    seeded sample. Returns ({arg index or ("out", name): (axis, rows)}, row ids, text)."""
    import torch
    if point.kind != "big" or not spec.row_dims:
        return {}, [], ""
    d = spec.row_dims[0]
    n = point.sizes[d]
    tile = max(spec.dims[d].tiles or (1,))
    rows = set(range(min(tile, n))) | set(range(max(0, n - tile), n))
    cliff_rows = set()
    for name, t in spec.all_tensors.items():
        if d not in t.symbols:
            continue
        row_bytes = nbytes_of(spec, name, point.sizes, point.dtype_of) // n
        for cliff in (1 << 31, 1 << 32):
            r = cliff // max(row_bytes, 1)
            if r < n:
                cliff_rows |= set(range(max(0, r - tile), min(n, r + tile)))
    rows |= cliff_rows
    gen = torch.Generator().manual_seed(point.seed)
    rows |= set(torch.randint(0, n, (SAMPLED_ROWS,), generator=gen).tolist())
    ids = sorted(rows)
    idx = torch.tensor(ids, dtype=torch.long, device=device)
    select = {}
    for i, name in enumerate(spec.args):
        if name in spec.tensor_args and d in spec.tensor_args[name].symbols:
            select[i] = (spec.tensor_args[name].symbols.index(d), idx)
    for name in spec.outputs:
        if d in spec.all_tensors[name].symbols:
            select[("out", name)] = (spec.all_tensors[name].symbols.index(d), idx)
    text = (f"{len(ids):,} of {n:,} rows of {d}: the first and last tiles, the tiles at each 2^31 / 2^32 byte "
            f"boundary, and {SAMPLED_ROWS} sampled")
    return select, ids, text
