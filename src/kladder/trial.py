"""One point, in the current process: materialise, execute, compare, check the guards.

This runs inside a worker (isolate.py); it returns an Outcome and never prints. Whether the
process survives the point (a device fault poisons it) is said by `fatal` on the result."""
from __future__ import annotations

import time
from dataclasses import dataclass

from . import execute
from .compare import Finding, Where, check_contract, check_guards, compare_values, bumped_reference, sensitivity
from .materialize import materialize, reference_args
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
    try:
        inputs = materialize(spec, point, device)
        select, where_rows, rows_text = plan_rows(spec, point, inputs.args, device)
        ref_args = reference_args(spec, inputs, {i: v for i, v in select.items() if isinstance(i, int)})
    except Exception as e:  # noqa: BLE001 - every failure here is kladder's or the spec's
        if _is_oom(e):
            return Result(Outcome(point, OOM, reason=f"allocating the inputs ran out of memory: {e}"))
        return Result(Outcome(point, BROKEN, reason=f"building the inputs failed: {type(e).__name__}: {e}"))
    try:
        returned = execute.get(point.mode).call(spec.kernel, inputs.args, point.kwargs)
    except Exception as e:  # noqa: BLE001 - the kernel's own exception is a finding
        if _is_oom(e):
            return Result(Outcome(point, OOM, reason=f"the kernel ran out of memory: {e}"))
        if _is_device_fault(e):
            return Result(Outcome(point, FAILED, [Finding("device_fault", "", f"the kernel faulted the device: {type(e).__name__}: {_first_line(e)}", pattern="device fault")]), fatal=True)
        return Result(Outcome(point, FAILED, [Finding("raised", "", f"the kernel raised {type(e).__name__}: {_first_line(e)}", pattern="raised")]))
    findings = _guard_findings(spec, inputs, point)
    outputs, contract = _collect(spec, inputs, returned)
    findings += contract
    try:
        refs = _split_ref(spec, spec.reference(*ref_args))
        bumped = _split_ref(spec, bumped_reference(spec.reference, ref_args, point.seed))
    except Exception as e:  # noqa: BLE001
        return Result(Outcome(point, BROKEN, findings, reason=f"the reference raised {type(e).__name__}: {_first_line(e)} (a spec problem, not a kernel failure)"))
    sens = {n: sensitivity(refs[n], bumped.get(n)) for n in refs}
    findings += _compare_outputs(spec, point, device, outputs, refs, select, where_rows, sens)
    status = FAILED if findings else PASSED
    return Result(Outcome(point, status, findings, rows_checked=rows_text))


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


def _compare_outputs(spec, point, device, outputs, refs, select, where_rows, sens) -> list[Finding]:
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
        f = compare_values(name, out, refs[name], spec.tolerance_for(dtype), where, describe, sens.get(name))
        if f:
            findings.append(f)
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
