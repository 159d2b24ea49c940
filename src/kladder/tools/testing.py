"""kladder's judge in a user's own tests, in this process: `kl.inputs(spec, point)` builds a point's
inputs as the kernel gets them in a climb, and `kl.assert_close(actual, expected)` judges a tensor
against the reference's as a climb judges an output, raising an AssertionError worded as the
report words the failure (what, where, how much, what was allowed: torch.testing's style).

Why `assert_close`: the call is torch.testing.assert_close's (actual, expected, rtol=, atol=,
msg=), so a test moves from one judge to the other by its module's name; what differs is the judge:

- the tolerance's absolute part is scaled: an element passes when |actual - expected| <= atol +
  rtol x max(|expected|, the RMS of its row of `expected`), where torch.testing allows atol + rtol
  x |expected|. With the same rtol and atol kladder's allowance is never smaller, so every pair
  torch.testing passes kladder passes too (NaN aside, below); an element near zero in a row of
  magnitude ~1 (a correct bfloat16 kernel's rounding noise around a cancellation) fails torch's
  1e-5 and passes kladder's rtol x the row's RMS;
- `expected` is the reference (float64 is best) and need not have `actual`'s dtype: the tolerance
  is the default of `actual`'s dtype (torch.testing's table), or the spec's for that output;
- NaN-aware: NaN where the reference is NaN passes (torch.testing's equal_nan=True), a non-finite
  element where the reference is finite fails whatever the tolerance, and an infinity of the
  reference's sign passes where the true value is past the dtype's largest finite (an overflow
  is the right answer there);
- the message names where the wrong elements are ("the last 7 columns (N % 8 = 7) of every
  row"), with the spec's dims and tiles when `spec=` and `output=` are given.

The honest peer's widening needs the reference run on the inputs (a climb's work, `kladder repro`);
here `peer=` takes one run of it that the caller made in the kernel's precision (the reference on
the inputs as the kernel got them, in their dtype): where the default fails, kladder allows C x
the error that correct implementation makes there, as a climb does without the rounding spread."""
from __future__ import annotations

from typing import Any

from ..core.point import Point
from ..core.spec import DEFAULT_TOLERANCES, Spec, Tolerance


def _spec(spec) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str):
        from ..gen.load import load_spec
        return load_spec(spec)
    raise TypeError(f"spec: got {type(spec).__name__}; give a kl.Spec or its reference 'path.py::name'.")


def _point(point, spec: Spec) -> Point:
    if isinstance(point, str):
        try:
            point = Point.parse(point)
        except ValueError as e:
            raise ValueError(f"point: {e}") from None
    if not isinstance(point, Point):
        raise TypeError(f"point: got {type(point).__name__}; give a kl.Point or the point as a report prints it.")
    if point.spec != spec.name:
        raise ValueError(f"point: it belongs to spec {point.spec!r}, not {spec.name!r}.")
    from ..climbing.pointcheck import check_point
    check_point(spec, point)
    return point


def inputs(spec, point, device: str | None = None) -> dict[str, Any]:
    """The point's inputs as the kernel gets them in a climb: every argument of `spec.args`, in
    order (pass them positionally, with the point's config as keywords: `kernel(*args.values(),
    **point.kwargs)`), each tensor with the point's seed, dtypes, value kinds and layout, inside
    kladder's guarded buffer (a view, as in the climb). `spec`: a kl.Spec or 'path.py::name';
    `point`: a kl.Point or its text (JSON, or the dict a report prints); `device`: default cuda
    when torch sees one, else cpu (Triton kernels then need TRITON_INTERPRET=1 set before triton
    is imported, as kladder sets it in its workers)."""
    from ..gen.materialize import materialize
    spec = _spec(spec)
    point = _point(point, spec)
    if device is None:
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return dict(zip(spec.args, materialize(spec, point, device).args, strict=True))


def assert_close(actual, expected, *, rtol: float | None = None, atol: float | None = None, spec=None,
                 output: str | None = None, config=(), peer=None, msg: str | None = None) -> None:
    """Judge `actual` against `expected` (the reference's output) as a climb judges an output
    (see the module's docstring); raise AssertionError worded as the report words the failure.
    `rtol`/`atol` replace the tolerance's parts; else the spec's tolerance for `output` (with
    `spec=` and `output=`, at the call `config` names), else the default of `actual`'s dtype.
    `peer`: the reference run in the kernel's precision, for the honest peer's budget. `msg`: a
    line put before the report's words."""
    import torch
    from ..checks import values
    from ..checks.pattern import Where, where_of
    from ..report import words
    for what, t in (("actual", actual), ("expected", expected)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what}: got {type(t).__name__}; give a torch.Tensor.")
    spec = _spec(spec) if spec is not None else None
    name = output or "actual"
    dtype = str(actual.dtype).removeprefix("torch.")
    tol = spec.tolerance_for(dtype, config) if spec is not None else DEFAULT_TOLERANCES.get(dtype, Tolerance(0.0, 0.0))
    tol = Tolerance(tol.rtol if rtol is None else float(rtol), tol.atol if atol is None else float(atol))
    where = where_of(spec, output) if spec is not None and output in spec.all_tensors else Where()
    about = {"dtype": dtype, "shape": list(actual.shape)}
    found = values.compare(name, actual, expected.to(actual.device), tol, where, about, peer=peer)
    if found is not None:
        head = f"{msg}\n" if msg else ""
        raise AssertionError(f"{head}{name} is not close to expected (kladder's judge):\n{words.message(found)}")
