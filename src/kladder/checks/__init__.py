"""Judging only: each module turns outputs and references into Findings (values and
tolerance, pattern, bias, sensitivity, bitwise, guards and contract, padding, independence,
invariants, model score, repetition, sanitizer, a collective's ranks); none calls a kernel or the reference, none
formats a sentence.

`Judge` takes what an execution mode observed, one observation at a time, in the order the
mode made them, and keeps the findings, the warnings and what the mode measured."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..outcome import Cause, Check, Finding, Note, NoteKind
from ..sizes import ITEMSIZE, dtype_of, shape_of
from . import (
    bias,
    bitwise,
    collective,
    contract,
    dispatch,
    flags,
    guards,
    imports,
    independence,
    invariants,
    model_score,
    repetition,
    sanitizer,
    sensitivity,
    values,
)
from .pattern import Where, where_of


@dataclass
class Judge:
    spec: object
    point: object
    device: str
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    note: Note | None = None

    def call(self, prep, outputs: dict, returned, expected: dict, label: str = "") -> None:
        """One call of the kernel: guards, contract, NaN-aware values against the reference,
        invariants; `expected` is {"refs": {name: tensor}, "bumped": {name: [tensor per draw]}}."""
        spec, pt = self.spec, prep.point
        found = _guard_findings(spec, prep.inputs, pt)
        wrong_arity = contract.arity(spec, returned)
        if wrong_arity:
            found.append(wrong_arity)
        refs, bumped = expected["refs"], expected["bumped"]
        sens = {n: sensitivity.sensitivity(refs[n], bumped.get(n)) for n in refs}
        policy = spec.nonfinite if any(k == "nonfinite" for _, k in pt.values) else None
        if policy == "raise":
            found.append(Finding(Check.NONFINITE))
        found += self._outputs(pt, outputs, refs, prep, sens, policy)
        if pt.rung <= 3:
            inputs = {n: a for n, a in zip(spec.args, prep.inputs.args) if n not in spec.out_args}
            found += invariants.invariants(spec, pt, inputs, outputs)
        for f in found:
            f.call = f.call or label
        self.findings += found

    def same(self, before: dict, after: dict, cause: Cause, call: str, facts: dict | None = None) -> None:
        """Two results that must be equal bit for bit."""
        where = {n: where_of(self.spec, n) for n in before} if cause == Cause.PADDING else None
        self.findings += bitwise.same(before, after, cause, call, where, facts)

    def traces(self, traces) -> None:
        f = independence.shared_code(traces)
        if f:
            self.findings.insert(0, f)

    def scores(self, measured: dict) -> None:
        found, self.note = model_score.judge(self.spec, measured)
        self.findings += found

    def measured(self, note: Note) -> None:
        self.note = note

    def ran(self, ran) -> None:
        """What a rung-7 call ran, against the spec's expectations; kept as the point's note."""
        f = dispatch.dispatch(self.spec, self.point, ran)
        if f:
            self.findings.append(f)
        self.note = Note(NoteKind.RAN, dispatch.ran_facts(ran))

    def flagged(self, flagged) -> None:
        f, self.note = flags.no_effect(flagged)
        if f:
            self.findings.append(f)

    def imported(self, imported) -> None:
        self.findings += imports.contracts(self.spec, imported)
        self.warnings += imports.caught(imported)
        self.note = Note(NoteKind.IMPORTS_CHECKED, {"names": [n for n, _, _ in imported.resolved],
                                                    "traced": list(imported.traced)})

    def ranks(self, seen) -> None:
        """Every call of every rank of a collective, and how the run ended (rung 6)."""
        self.findings += collective.judge(self.spec, self.point, seen, self.device)
    def repeats(self, r, expected: dict | None) -> None:
        """Many calls of one point (rung 5); `expected` is the reference on the worst call's inputs."""
        self._add(*repetition.judge(self.spec, self.point, r, expected))

    def sanitized(self, s) -> None:
        self._add(*sanitizer.judge(s))

    def _add(self, found: list[Finding], warned: list[Finding], note: Note | None) -> None:
        self.findings += found
        self.warnings += [w for w in warned if w not in self.warnings]
        if not self.findings:                # what a passing point proved; a failure says what went wrong instead
            self.note = note or self.note

    def _outputs(self, pt, outputs, refs, prep, sens, policy) -> list[Finding]:
        spec, found = self.spec, []
        for name in spec.outputs:
            dtype = dtype_of(spec, name, pt.dtype_of)
            shape = shape_of(spec, name, pt.sizes)
            out = outputs.get(name)
            bad = contract.contract(name, out, shape, dtype, self.device)
            if bad:
                found.append(bad)
                continue
            sel = prep.select.get(("out", name))
            if sel is not None:
                out = out.index_select(*sel)
            where = where_of(spec, name, {sel[0]: prep.row_ids} if sel is not None else {})
            about = {"dtype": dtype, "shape": list(shape), "mode": pt.mode}
            f = values.compare(name, out, refs[name], spec.tolerance_for(dtype), where, about, sens.get(name), policy)
            if f:
                found.append(f)
            elif pt.rung <= 3 and not (dtype == "bfloat16" and _interpreted(self.device)):
                w = bias.bias(name, out, refs[name])
                if w and w not in self.warnings:
                    self.warnings.append(w)
        return found


def _guard_findings(spec, inputs, point) -> list[Finding]:
    out = []
    for name, g in inputs.guarded.items():
        before, after = g.damaged()
        f = guards.guards(name, before, after, ITEMSIZE[dtype_of(spec, name, point.dtype_of)])
        if f:
            out.append(f)
    return out


def _interpreted(device: str) -> bool:
    """Triton's interpreter (3.9) converts float32 to bfloat16 by truncation, not to nearest
    as a GPU does: every bfloat16 output would lean toward zero, the interpreter's bias and not
    the kernel's. The bias check is left to the GPU for bfloat16 outputs."""
    return device == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"


__all__ = ["Judge", "Where", "bias", "bitwise", "collective", "contract", "dispatch", "flags", "guards", "imports", "independence",
           "invariants", "model_score",
           "repetition", "sanitizer", "sensitivity", "values"]
