"""The three things every execution mode does with a point: prepare its inputs, call the
kernel, run the reference. Calling only: nothing here judges (checks/ does that).

prepare: seeded inputs in guarded buffers and the reference's copies, taken before the call
(a kernel may scribble on its inputs); call: one call, its exception wrapped as the kernel's;
expected: the reference on the prepared copies, and on perturbed copies for the sensitivity."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..checks.sensitivity import perturbed
from ..materialize import GUARD_BYTES, Inputs, materialize, reference_args
from ..outcome import KernelError, NoteKind, RowsChecked, SpecBroken, error_facts
from ..point import Point
from ..rows import plan_rows
from ..spec import Spec
from .faults import is_oom
from .modes.base import call_once, call_raw


@dataclass
class Prepared:
    point: Point
    inputs: Inputs
    ref_args: list
    select: dict
    row_ids: list
    rows: RowsChecked | None


class Harness:
    def __init__(self, spec: Spec, point: Point, device: str, guard: int = GUARD_BYTES):
        self.spec, self.point, self.device = spec, point, device
        self.guard = guard                   # guard bytes around every tensor (0 under compute-sanitizer)

    def prepare(self, point: Point | None = None, seed: int | None = None, outs_from: Prepared | None = None) -> Prepared:
        """With `outs_from`, Out args reuse that call's buffers as they are (not re-poisoned)."""
        pt = point or self.point
        if seed is not None:
            pt = dataclasses.replace(pt, seed=seed)
        try:
            inputs = materialize(self.spec, pt, self.device, reuse=outs_from.inputs if outs_from else None,
                                 guard=self.guard)
            select, row_ids, rows = plan_rows(self.spec, pt, self.device)
            ref_args = reference_args(self.spec, inputs, {i: v for i, v in select.items() if isinstance(i, int)})
        except Exception as e:  # noqa: BLE001 - every failure here is kladder's or the spec's
            if is_oom(e):
                raise
            raise SpecBroken(NoteKind.INPUTS_FAILED, **error_facts(e, whole=True)) from e
        return Prepared(pt, inputs, ref_args, select, row_ids, rows)

    def call(self, prep: Prepared, label: str = "", runner=None):
        """One call of the kernel (through `runner`, the mode's, when given)."""
        try:
            if runner is not None:
                return runner(self.spec.kernel, prep.inputs.args, prep.point.kwargs)
            return call_once(self.spec.kernel, prep.inputs.args, prep.point.kwargs)
        except (Exception, KeyboardInterrupt, SystemExit) as e:  # noqa: BLE001 - the kernel's own: a finding
            # a worker never receives a Ctrl-C (it runs in a session of its own), so a
            # KeyboardInterrupt here was raised by the kernel; sys.exit ends the process
            raise KernelError(e, label) from e

    def call_with(self, args: list, kwargs: dict, label: str):
        """One call on the given arguments, with no synchronize (rung 5 calls into a ring of
        output buffers and orders the work itself); its exception wrapped as the kernel's."""
        try:
            return call_raw(self.spec.kernel, args, kwargs)
        except Exception as e:  # noqa: BLE001 - the kernel's own exception is a finding
            raise KernelError(e, label) from e

    def outputs(self, prep: Prepared, returned) -> dict:
        """Outputs by name: Out args from their buffers, returned tensors from the return value
        (what cannot be read from it is missing; checks.contract.arity says why)."""
        outputs = dict(prep.inputs.outs)
        names = list(self.spec.returned)
        if len(names) == 1:
            outputs[names[0]] = returned
        elif isinstance(returned, dict):
            outputs.update({n: returned.get(n) for n in names})
        elif isinstance(returned, (tuple, list)) and len(returned) == len(names):
            outputs.update(zip(names, returned))
        return outputs

    def expected(self, prep: Prepared) -> dict:
        """The reference's outputs by name, and each output under every perturbation draw."""
        try:
            refs = self._split(self.spec.reference(*prep.ref_args))
            draws = [self._split(self.spec.reference(*args)) for args in perturbed(prep.ref_args, prep.point.seed)]
        except Exception as e:  # noqa: BLE001
            if is_oom(e):
                raise                                # the point could not run for memory: not the spec's fault
            raise SpecBroken(NoteKind.REFERENCE_RAISED, **error_facts(e)) from e
        return {"refs": refs, "bumped": {n: [d.get(n) for d in draws] for n in refs}}

    def _split(self, ref) -> dict:
        names = list(self.spec.outputs)
        if len(names) == 1:
            return {names[0]: ref}
        if isinstance(ref, dict):
            return ref
        return dict(zip(names, ref))
