"""Judging only: each module turns outputs and references into Findings (values and
tolerance, pattern, bias, the honest peer, bitwise, guards and contract, padding, independence,
invariants, model score, repetition, sanitizer, a collective's ranks); none calls a kernel or the
reference, none formats a sentence.

`Judge` takes what an execution mode observed, one observation at a time, in the order the
mode made them, and keeps the findings, the warnings and what the mode measured."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..core.notation import ValueKind, Values
from ..core.outcome import Cause, Check, Finding, Note, NoteKind, SpecBroken
from ..core.facts import ErrorFacts, NotBitwiseFacts, PaddingFacts, RanFacts, UncapturedFacts, ValuesFacts
from ..core.sizes import ITEMSIZE, dtype_of, shape_of
from ..gen.rows import select_key
from . import (
    bias,
    bitwise,
    collective,
    contract,
    dispatch,
    fast,
    flags,
    guards,
    imports,
    independence,
    inputs,
    invariants,
    model_score,
    peer,
    repetition,
    sanitizer,
    values,
)
from .pattern import Where, count, original_index, unravel, where_of
from .pattern import describe as pattern_describe


@dataclass
class _Open:
    """One call being judged, while its outputs wait for the honest peer."""
    label: str
    head: list
    slots: list            # per output, in order: a Finding, None (passed), or a _Pending
    tail: list
    rounding: dict | None  # the interpreter's float32 -> bfloat16 evidence, when the call converted


@dataclass
class _Pending:
    name: str
    need: str              # "values": a failure the peer may excuse; "bias": a lean the peer may share
    out: object
    ref: object
    tol: object
    where: Where
    about: dict
    dtype: str
    mismatch: object = None


class _Needs(dict):
    """The outputs whose verdict the honest peer decides (name -> "values" | "bias"), and
    `decided(spreads, unit, kernels)`: whether, with these lower bounds of the rounding spreads
    and the kernel-precision peers (name -> tensor), every waiting output already passes (the
    harness then stops drawing: checks/peer.CHECK_DRAWS)."""
    pending: list = []

    def decided(self, spreads: dict, unit: float, kernels: dict) -> bool:
        for p in self.pending:
            sp = spreads.get(p.name)
            if sp is None or not values.decided(p.mismatch, p.out, p.ref, p.tol, sp, kernels.get(p.name), unit):
                return False
        return True


@dataclass
class Judge:
    spec: object
    point: object
    device: str
    interpreted: bool = False          # Triton runs under its interpreter (decided by the worker: run/interpreter.on)
    # the call's inputs are the buffers it wrote (the mode's trait, passed by run/trial.py: eager,
    # padding): declared mutations judged against the reference's copy at rungs 1-3
    judges_mutations: bool = False
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    note: Note | None = None
    unjudged: Note | None = None       # a failure that Triton's interpreter explains (run/interpreter.py)
    broken: Note | None = None         # the spec's problem found while judging (a reference that is not independent)
    _open: _Open | None = None
    _stream: object = None             # rung 5's stream, batch by batch (repetition.StreamTally)
    # the last call's mismatch masks of the outputs that failed the values check, by name (bool,
    # the output's shape, or its checked rows'): what `kladder repro --pdb/--save` shows (run/debug.py)
    masks: dict = field(default_factory=dict)

    def call(self, prep, outputs: dict, returned, expected: values.Expected, label: str = "",
             rounding: dict | None = None) -> dict:
        """One call of the kernel: guards, contract, NaN-aware values against the reference at
        the dtype's default (`expected`), invariants. Returns the
        outputs whose verdict the honest peer decides ({name: "values" | "bias"}): the caller
        fetches their peers (run/harness.py Harness.peers) and hands them to `settle`.
        `rounding`: the interpreter's probe evidence when the call converted float32 to
        bfloat16 on an interpreter that truncates."""
        spec, pt = self.spec, prep.point
        self.masks = {}
        head = _guard_findings(spec, prep.inputs, pt) + _allocation_findings(getattr(prep, "allocated", []), outputs)
        head += inputs.changed(spec, prep.inputs, pt, getattr(prep, "snapshot", None) or [])
        backward = getattr(prep, "backward", None)
        if backward is not None:               # kladder's gradient buffers: their guards, the upstream gradients as passed
            head += _backward_guard_findings(spec, backward, pt) + inputs.upstream_changed(spec, backward.upstream,
                                                                                          backward.snapshot)
        head = self._declared_writes(head, prep, outputs, expected.refs)
        wrong_arity = contract.arity(spec, returned)
        if wrong_arity:
            head.append(wrong_arity)
        policy = spec.nonfinite if any(k == ValueKind(Values.NONFINITE) for k in pt.kinds.values()) else None
        if policy == "raise":
            head.append(Finding(Check.NONFINITE))
        slots = self._outputs(pt, outputs, expected.refs, prep, policy, expected.refs_lo)
        slots += self._mutated(pt, prep, expected.refs, policy)
        tail = []
        if pt.rung <= 3:
            given = {n: a for n, a in zip(spec.args, prep.inputs.args, strict=True) if n not in spec.out_args}
            tail = invariants.invariants(spec, pt, given, outputs)
        self._open = _Open(label, head, slots, tail, rounding)
        needs = _Needs({s.name: s.need for s in slots if isinstance(s, _Pending)})
        needs.pending = [s for s in slots if isinstance(s, _Pending) and s.need == "values"]
        if not needs:
            self.settle({})
        return needs

    def settle(self, peers: dict) -> None:
        """The outputs that waited, judged with their peers (name -> harness.Peer)."""
        op, self._open = self._open, None
        if op is None:
            return
        found = list(op.head)
        for slot in op.slots:
            if isinstance(slot, _Pending):
                slot = self._judged(slot, peers.get(slot.name), op.rounding)
            if isinstance(slot, Finding):
                found.append(slot)
        found += op.tail
        for f in found:
            f.call = f.call or op.label
        self.findings += found

    def same(self, before: dict, after: dict, cause: Cause, call: str,
             facts: NotBitwiseFacts | PaddingFacts | None = None) -> None:
        """Two results that must be equal bit for bit."""
        where = {n: where_of(self.spec, n) for n in before} if cause == Cause.PADDING else None
        self.findings += bitwise.same(before, after, cause, call, where, facts)

    def uncaptured(self, facts: ErrorFacts) -> None:
        """A capture that failed where the spec does not say production graphs the kernel: a warning."""
        self.warnings.append(Finding(Check.UNCAPTURED, facts=UncapturedFacts(**facts.to_dict())))

    def traces(self, traces) -> None:
        """A reference that runs the kernel's own code: the spec's problem, kept apart from the
        kernel's findings (the point is BROKEN, never a failure of the kernel)."""
        self.broken = independence.shared_code(traces) or self.broken

    def scores(self, measured: dict) -> None:
        found, self.note = model_score.judge(self.spec, measured)
        self.findings += found

    def measured(self, note: Note) -> None:
        self.note = note

    def ran(self, ran) -> None:
        """What a rung-7 call ran, against the spec's expectations; kept as the point's note."""
        have = dispatch.toolchain_of(self.device) if dispatch.names_toolchain(self.spec) else {}
        f, unjudged = dispatch.dispatch(self.spec, self.point, ran, have)
        if f:
            self.findings.append(f)
        self.note = Note(NoteKind.RAN, RanFacts(**dispatch.ran_facts(ran), unjudged=unjudged or None))

    def flagged(self, flagged) -> None:
        f, self.note = flags.no_effect(flagged)
        if f:
            self.findings.append(f)

    def imported(self, imported) -> None:
        self.findings += imports.contracts(self.spec, imported)
        self.warnings += imports.caught(imported)
        self.note = Note.of(NoteKind.IMPORTS_CHECKED, names=[n for n, _, _ in imported.resolved],
                                   traced=list(imported.traced))

    def ranks(self, seen) -> None:
        """Every call of every rank of a collective, and how the run ended (rung 6)."""
        self.findings += collective.judge(self.spec, self.point, seen, self.device)
    def stream_batch(self, batch, peers, rounding: dict | None = None) -> None:
        """One batch of rung 5's stream: each call against the reference of its own inputs."""
        if self._stream is None:
            self._stream = repetition.StreamTally(self.spec, self.point)
        self._stream.batch(batch, peers, rounding)

    def streamed(self, s) -> None:
        """The stream ended: its wrong calls' rate and the first one, or what a clean stream proved."""
        tally = self._stream or repetition.StreamTally(self.spec, self.point)
        self._add(*tally.result(s))

    def repeats(self, r, expected: values.Expected | None, peers=None) -> None:
        """Many calls of one point (rung 5); `expected` is the reference on the worst call's inputs,
        `peers(names)` their honest peers."""
        self._add(*repetition.judge(self.spec, self.point, r, expected, peers))

    def sanitized(self, s) -> None:
        self._add(*sanitizer.judge(s))

    def _add(self, found: list[Finding], warned: list[Finding], note: Note | None) -> None:
        self.findings += found
        self.warnings += [w for w in warned if w not in self.warnings]
        if not self.findings:                # what a passing point proved; a failure says what went wrong instead
            self.note = note or self.note


    def _outputs(self, pt, outputs, refs, prep, policy, refs_lo) -> list:
        spec, slots = self.spec, []
        grads = [n for n in spec.grad_outputs if n in outputs]     # Spec.grads: each input's gradient, one more output
        for name in [*spec.outputs, *grads]:
            dtype = dtype_of(spec, name, pt.dtype_of)
            shape = shape_of(spec, name, pt.sizes)
            out = outputs.get(name)
            bad = contract.contract(name, out, shape, dtype, self.device)
            if bad:
                slots.append(bad)
                continue
            sel = prep.select.get(("out", name))
            if sel is not None:
                out = out.index_select(*sel)
            where = where_of(spec, name, {sel[0]: prep.row_ids} if sel is not None else {})
            about = {"dtype": dtype, "shape": list(shape), "mode": pt.mode}
            tol = spec.tolerance_for(dtype, pt.config, name)
            ref = refs[name]
            if tuple(ref.shape) != tuple(out.shape):
                # the kernel's output passed the contract above: the declared shape is the kernel's
                raise SpecBroken(NoteKind.REFERENCE_SHAPE, output=name, shape=list(ref.shape), declared=list(out.shape))
            m = values.mismatch(out, ref, tol, policy, refs_lo.get(name))
            if m is not None and policy is None:
                _reference_nan(name, m, ref, prep, where)
            pending = _Pending(name, "values", out, ref, tol, where, about, dtype, m)
            beyond = values.beyond_peers(m, out, ref, tol) if m is not None else None
            if beyond is not None:                      # past what any peer can excuse: judged at once
                m = values.not_needed(m, beyond)
            if m is not None:
                if not (m.n_excusable and beyond is None):
                    self.masks[name] = m.bad
                slots.append(pending if m.n_excusable and beyond is None else
                             values.finding(name, m, out, ref, tol, where, about))
            elif self._bias_judged(pt, dtype) and bias.bias(name, out, ref) is not None:
                pending.need = "bias"
                slots.append(pending)
            else:
                slots.append(None)
        return slots

    def _declared_writes(self, found: list, prep, outputs: dict, refs: dict) -> list:
        """Writes the spec declares in the backward (mutated='backward' inputs, grad_overwritten
        outputs' upstream gradients): a changed buffer passes where it now holds a gradient, the
        kernel's own gradient output bit for bit (judged as that output) or the reference's within
        the gradient's tolerance; otherwise its change stays a finding, marked declared."""
        from ..core.spec import grad_name, upstream_name
        pt, backward = prep.point, getattr(prep, "backward", None)
        if backward is None:
            return found
        named = dict(zip(self.spec.args, prep.inputs.args, strict=True))
        # each buffer, and the rows of it a reference sampled at a big point (rows.py): (axis, ids) or None
        buffers = {n: (named[n], prep.select.get(select_key(self.spec, n))) for n in self.spec.written_in_backward(pt)}
        buffers.update({upstream_name(n): (backward.upstream[n], prep.select.get(select_key(self.spec, n)))
                        for n in self.spec.overwritten_at(pt) if n in backward.upstream})
        candidates = [(outputs.get(grad_name(n)), refs.get(grad_name(n))) for n in self.spec.grads]
        # an accumulation point: .grad holds held + times x one call's gradient; the buffer, one call's
        held_ref = dict(zip(backward.held, backward.ref_extra[len(backward.upstream):], strict=True))
        candidates += [(None, (refs[grad_name(n)] - held_ref[n].to(refs[grad_name(n)].dtype)) / backward.times)
                       for n in held_ref if refs.get(grad_name(n)) is not None]
        kept = []
        for f in found:
            buf, sel = buffers.get(f.output, (None, None)) if f.check == Check.INPUT_CHANGED else (None, None)
            if buf is None:
                kept.append(f)
            elif not self._holds_gradient(buf, candidates, pt, sel):
                kept.append(dataclasses.replace(f, facts=dataclasses.replace(f.facts, declared="gradient")))
        return kept

    def _holds_gradient(self, buf, candidates: list, pt, sel=None) -> bool:
        """`buf` holds one of the gradients: the kernel's (bit for bit) or the reference's (at the
        dtype's tolerance; on the rows `sel` the reference sampled at a big point)."""
        import torch
        rows = buf if sel is None else buf.index_select(sel[0], sel[1].to(buf.device))
        for mine, ref in candidates:
            if isinstance(mine, torch.Tensor) and mine.shape == buf.shape and mine.dtype == buf.dtype \
                    and not bool(bitwise.bits_differ(buf, mine).any()):
                return True
            if isinstance(ref, torch.Tensor) and tuple(ref.shape) == tuple(rows.shape) and buf.is_floating_point():
                tol = self.spec.tolerance_for(str(buf.dtype).removeprefix("torch."), pt.config)
                if values.mismatch(rows.to(ref.device), ref, tol) is None:
                    return True
        return False

    def _mutated(self, pt, prep, refs: dict, policy) -> list:
        """Inputs the spec declares mutated (kl.Tensor(mutated=True)): the kernel's buffer after the
        call against the reference's copy after the reference's call, at the dtype's tolerance (no
        honest peer: the reference's lowered run does not return its inputs). Judged where the
        call's inputs are the buffers it wrote (judges_mutations): eager calls of rungs 1-3."""
        found = []
        if pt.rung > 3 or not self.judges_mutations:
            return found
        for name in self.spec.mutated_at(pt):
            got, ref = dict(zip(self.spec.args, prep.inputs.args, strict=True))[name], refs.get(name)
            if ref is None:
                continue
            dtype = dtype_of(self.spec, name, pt.dtype_of)
            if dtype not in ("float64", "float32", "float16", "bfloat16"):
                bad = bitwise.bits_differ(got.to(ref.device, ref.dtype), ref) if got.shape == ref.shape else None
                if bad is not None and bool(bad.any()):
                    found.append(Finding(Check.VALUES, name, pattern=pattern_describe(bad, where_of(self.spec, name)),
                                         mismatched=count(bad), total=bad.numel(),
                                         facts=ValuesFacts(dtype=dtype, shape=list(got.shape), mode=pt.mode, mutated=True)))
                continue
            sel = prep.select.get(select_key(self.spec, name))
            if sel is not None:
                got = got.index_select(sel[0], sel[1].to(got.device))
            where = where_of(self.spec, name, {sel[0]: prep.row_ids} if sel is not None else {})
            about = {"dtype": dtype, "shape": list(got.shape), "mode": pt.mode, "mutated": True}
            tol = self.spec.tolerance_for(dtype, pt.config)
            bad_shape = values.shape_finding(name, got, ref)
            if bad_shape:
                found.append(bad_shape)
                continue
            m = values.mismatch(got, ref, tol, policy)
            if m is not None:
                found.append(values.finding(name, m, got, ref, tol, where, about))
        return found

    def _judged(self, p: _Pending, peer, rounding: dict | None) -> Finding | None:
        """A waiting output with its peer: the values re-judged (a failure it excuses passes), and
        a passing output's lean judged against the peer's own."""
        kernel_peer = getattr(peer, "kernel", None)
        m = p.mismatch
        if p.need == "values":
            m = values.settle_with(m, p.out, p.ref, p.tol, peer)
            if (m is not None and rounding is not None and p.dtype == "bfloat16"
                    and values.settle(m, p.out, p.ref, p.tol, slack_ulps=1) is None):
                self.unjudged = Note.of(NoteKind.INTERPRETER_DEFECT, feature="bf16_rounding", **rounding)
                return None
            if m is not None and values.near_miss_kept(m, p.out.numel(), peer):
                f = values.finding(p.name, m, p.out, p.ref, p.tol, p.where, p.about)
                f = dataclasses.replace(f, facts=dataclasses.replace(f.facts, near_miss=round(m.worst_ratio, 4)))
                if f not in self.warnings:
                    self.warnings.append(f)             # a near miss more runs did not settle: said, not blamed
                return None
            if m is not None:
                self.masks[p.name] = m.bad
                return values.finding(p.name, m, p.out, p.ref, p.tol, p.where, p.about)
        if self._bias_judged(self.point, p.dtype):
            w = bias.bias(p.name, p.out, p.ref, kernel_peer)
            if w and w not in self.warnings:
                self.warnings.append(w)
        return None

    def _bias_judged(self, pt, dtype: str) -> bool:
        """Triton's interpreter (3.9) converts float32 to bfloat16 by truncation, not to nearest
        as a GPU does: every bfloat16 output would lean toward zero, the interpreter's bias and
        not the kernel's. The bias check is left to the GPU for bfloat16 outputs."""
        return pt.rung <= 3 and not (dtype == "bfloat16" and self.device == "cpu" and self.interpreted)


def _reference_nan(name: str, m, ref, prep, where: Where) -> None:
    """A reference that is NaN where the kernel gave a number and every input is finite: the
    reference's fault (a 0/0, an inf - inf of its own formula), so the point is BROKEN, never the
    kernel's FAILED. An infinity is an answer (values.py: a true value may overflow); a NaN the
    kernel gives too is the contract both keep (0/0 of an all-zero row: IEEE's answer) and passes;
    NaN/Inf inputs (Spec(nonfinite=) points, replayed tensors) leave the NaN to the values check."""
    import torch
    if not m.n_bad or not ref.is_floating_point():
        return
    hit = m.bad & ref.isnan()                # failing and NaN: the kernel's output is not NaN there
    count = int(hit.sum())
    if not count:
        return
    for a in prep.ref_args:
        if isinstance(a, torch.Tensor) and a.is_floating_point() and not bool(a.isfinite().all()):
            return
    first = int(hit.reshape(-1).nonzero()[0])
    at = original_index(unravel(first, tuple(ref.shape)), where)
    raise SpecBroken(NoteKind.REFERENCE_NAN, output=name, count=count, total=int(ref.numel()), at=list(at))


def _guard_findings(spec, inputs, point) -> list[Finding]:
    from ..gen.materialize import any_damaged
    out = []
    if not any_damaged(inputs.guarded.values()):
        return out
    for name, g in inputs.guarded.items():
        before, after = g.damaged()
        f = guards.guards(name, before, after, ITEMSIZE[dtype_of(spec, name, point.dtype_of)])
        if f:
            out.append(f)
    return out


def _backward_guard_findings(spec, backward, point) -> list[Finding]:
    """Guard bytes around kladder's own gradient buffers (Spec.grads): each upstream gradient
    ('upstream y') and, at an accumulation point, what each `.grad` held ('grad of w')."""
    from ..gen.materialize import any_damaged
    if not backward.guarded or not any_damaged(backward.guarded.values()):
        return []
    out = []
    for name, g in backward.guarded.items():
        before, after = g.damaged()
        f = guards.guards(name, before, after, g.view.element_size())
        if f:
            out.append(f)
    return out


def _allocation_findings(allocated: list, outputs: dict) -> list[Finding]:
    """Guard bytes around the tensors the kernel allocated itself during the call
    (run/guarded_alloc.py): one it returned is named as that output, any other as the kernel's
    scratch allocation (its op, shape and dtype)."""
    from ..gen.materialize import any_damaged
    if not allocated or not any_damaged([a.g for a in allocated]):
        return []
    out = []
    for a in allocated:
        if guards.resized(a) or not any_damaged([a.g]):
            continue
        before, after = a.g.damaged()
        name = guards.returned_by(a, outputs)
        f = guards.guards(name, before, after, ITEMSIZE.get(a.dtype, 1), allocated=a.facts(bool(name)))
        if f:
            out.append(f)
    return out


__all__ = ["Judge", "Where", "bias", "bitwise", "collective", "contract", "dispatch", "fast", "flags", "guards", "imports",
           "independence", "inputs", "invariants", "model_score", "peer", "repetition", "sanitizer", "values"]
