"""`kladder repro POINT --pdb` and `--save DIR`: the point run once, in this process (no worker, no
replay, no timeout), through the same trial.run_point a worker runs, with a Watch that is told of
each call after its judgement and of the kernel's exception.

--pdb stops
- at the kernel's exception: pdb's post-mortem on its traceback (the original exception's, past
  Triton's interpreter's InterpreterError), at the innermost frame of the user's code (a
  @triton.jit body under the interpreter, the launcher), the folded traceback printed first;
- right after a call whose judgement found something (values, guards, the contract, ...), in a
  frame whose names are (docs/report.md: "From a failure to the fix"):
    inputs    {name: the argument as the kernel got it}, in Spec.args order (its Out buffers as the call left them)
    args, kwargs   the call: kernel(*args, **kwargs)
    outputs   {name: what the kernel gave}, each output by its spec name
    expected  {name: the reference's output} (float64 unless the spec says otherwise; a big point's checked rows)
    mask      {name: bool tensor, True where the element failed} for the outputs that failed the values check
    finding   the first finding of the call; findings, all of them; message, the finding in the report's words
    point, spec, kernel, torch
  `c` continues the run (its verdict is printed), `q` quits it.

--save DIR writes the first failing call's (else the last call's; at an exception, the raising
call's) tensors as safetensors (never pickle): inputs.safetensors (the inputs as the kernel got
them, made again from the point's seed: the bytes before the call; contiguous copies, each
layout's strides in the README), outputs.safetensors, expected.safetensors, mask.safetensors, and
README.md saying what each holds, the point and its repro command."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

from ..core.outcome import KernelError, Outcome
from ..core.point import Point


@dataclass
class Seen:
    """One call's tensors, kept for --save: the call's point (its seed), outputs, the reference's,
    the mismatch masks and what the judgement found."""
    point: Point
    outputs: dict
    expected: dict
    masks: dict
    findings: list
    label: str = ""


@dataclass
class Watch:
    """What trial.run_point tells a debugging run (never a worker's)."""
    spec: object
    pdb: bool = False
    kept: Seen | None = None               # the first failing call, else the last call

    def judged(self, seen, outputs: dict, expected, found: list, masks: dict) -> None:
        if self.kept is None or not self.kept.findings:
            self.kept = Seen(seen.prep.point, dict(outputs), dict(expected.refs), dict(masks), list(found), seen.label)
        if found and self.pdb:
            _stop_after_judgement(self.spec, seen, outputs, expected.refs, masks, found)

    def raised(self, h, k: KernelError) -> None:
        prep = h.calling
        if prep is not None and (self.kept is None or not self.kept.findings):
            self.kept = Seen(prep.point, {}, {}, {}, [], k.label)
        if self.pdb:
            _post_mortem(self.spec, k)


def debug_run(spec, point: Point, device: str, ref: str, pdb: bool = False, save: str | None = None) -> tuple[Outcome, dict]:
    """The point once, in this process, with a Watch; its tensors written to `save`. Returns the
    outcome and the environment's fingerprint."""
    from ..core.fingerprint import fingerprint, source_file
    from ..run.interpreter import probe
    from ..run.trial import run_point
    if device == "cpu":
        probe()
    watch = Watch(spec, pdb=pdb)
    outcome = run_point(spec, point, device, watch).outcome      # `q` in pdb raises bdb.BdbQuit through it
    if save:
        write_saved(save, spec, point, device, ref, watch.kept, outcome)
    return outcome, fingerprint(source_file(ref), device)


# ---------------------------------------------------------------------------- the debugger
def _stop_after_judgement(spec, seen, outputs: dict, expected: dict, mask: dict, findings: list) -> None:
    from ..report import words
    prep = seen.prep
    args, kwargs = list(prep.inputs.args), prep.point.kwargs
    inputs = dict(zip(spec.args, args, strict=True))
    finding = findings[0]
    message = words.message(finding)
    said = message.replace("\n", "\n    ")
    print(f"\nkladder: stopped after {seen.label or 'the call'} was judged: {finding.check}"
          f"{f' on `{finding.output}`' if finding.output else ''}:\n    {said}\n"
          "  in scope: inputs, args, kwargs, outputs, expected, mask, finding, findings, message, point, spec, kernel, torch\n"
          "  (`c` continues the run and prints its verdict, `q` quits)", flush=True)
    _stopped(inputs, args, kwargs, outputs, expected, mask, finding, findings, message, prep.point, spec, spec.kernel)


def _stopped(inputs, args, kwargs, outputs, expected, mask, finding, findings, message, point, spec, kernel) -> None:
    """The frame pdb stops in: its arguments are the names in scope (pdb's `args` lists them), and torch."""
    import pdb

    import torch  # noqa: F401 - in scope for the user's expressions
    pdb.Pdb().set_trace(sys._getframe())
    return None                              # pdb stops here: every name above is in scope


def _innermost(e: BaseException) -> BaseException:
    """The exception the kernel's code raised first: past what it was re-raised as (Triton's
    interpreter raises InterpreterError from the kernel body's own exception)."""
    while e.__cause__ is not None and e.__cause__.__traceback__ is not None:
        e = e.__cause__
    return e


def _post_mortem(spec, k: KernelError) -> None:
    import pdb

    from ..report import words
    from ..run.frames import kind_of, trace_of
    e = _innermost(k.error)
    trace = trace_of(k.error, spec.kernel, list(spec.args))
    lines = [f"\nkladder: the kernel raised {type(k.error).__name__}: {k.error}"]
    if trace is not None:
        from ..core.facts import TraceFacts
        lines += [f"  {line}" for line in words.trace_lines(TraceFacts(**trace))]
    lines.append("  post-mortem at the innermost frame of your code (`up`/`down` move, `c` continues the run and prints "
                 "its verdict)")
    print("\n".join(lines), flush=True)

    class AtUsersFrame(pdb.Pdb):
        def setup(self, f, tb):
            super().setup(f, tb)
            mine = [i for i, (fr, _) in enumerate(self.stack) if kind_of(fr.f_code.co_filename) == "user"]
            if mine:
                self.curindex = mine[-1]
                self.curframe = self.stack[self.curindex][0]
                self.curframe_locals = self.curframe.f_locals

    p = AtUsersFrame()
    p.reset()
    p.interaction(None, e.__traceback__)


# ---------------------------------------------------------------------------- --save
def write_saved(folder: str, spec, point: Point, device: str, ref: str, kept: Seen | None, outcome: Outcome) -> list[str]:
    """The kept call's tensors as safetensors files in `folder`, and README.md; returns the files written."""
    from ..gen.materialize import materialize
    call_point = kept.point if kept is not None else point
    given = materialize(spec, call_point, device).args
    inputs = dict(zip(spec.args, given, strict=True))
    tensors = {
        "inputs": {n: v for n, v in inputs.items() if _is_tensor(v)},
        "outputs": {n: v for n, v in (kept.outputs if kept else {}).items() if _is_tensor(v)},
        "expected": {n: v for n, v in (kept.expected if kept else {}).items() if _is_tensor(v)},
        "mask": {n: v for n, v in (kept.masks if kept else {}).items() if _is_tensor(v)},
    }
    os.makedirs(folder, exist_ok=True)
    written = []
    for part, named in tensors.items():
        if named:
            _save(os.path.join(folder, f"{part}.safetensors"), named, {"point": json.dumps(call_point.to_dict())})
            written.append(f"{part}.safetensors")
    scalars = {n: v for n, v in inputs.items() if not _is_tensor(v)}
    text = readme(spec, call_point, ref, device, tensors, scalars, kept, outcome, written)
    with open(os.path.join(folder, "README.md"), "w") as f:
        f.write(text)
    return [*written, "README.md"]


def _is_tensor(v) -> bool:
    import torch
    return isinstance(v, torch.Tensor)


def _save(path: str, named: dict, metadata: dict) -> None:
    """Each tensor as a contiguous copy on the host (safetensors keeps no strides and no shared storage)."""
    from safetensors.torch import save_file
    save_file({n: t.detach().to("cpu").contiguous().clone() for n, t in named.items()}, path, metadata=metadata)


def readme(spec, point: Point, ref: str, device: str, tensors: dict, scalars: dict, kept: Seen | None,
           outcome: Outcome, written: list[str]) -> str:
    """What each saved file holds, the point, and how to load them."""
    from ..climbing.ladder import repro_command
    from ..report import words
    lines = [f"# kladder repro --save: {point.id}", "",
             f"Spec `{spec.name}` ({ref}), on {device}; the point (its repro command):", "",
             "```text", repro_command(ref, device, point), "```", "",
             f"Verdict of this run: {outcome.status}" + (f" ({kept.label})" if kept and kept.label else "") + "."]
    for f in (kept.findings if kept else [])[:4]:
        lines.append(f"- {f.check}{f' on `{f.output}`' if f.output else ''}: " + words.message(f).replace("\n", "\n  "))
    lines += ["", "| file | holds |", "|---|---|"]
    what = {"inputs": "the kernel's arguments as it got them (made again from the point's seed: the bytes before the "
                      "call), by their Spec.args names; contiguous copies (their layouts below)",
            "outputs": "what the kernel gave, by output name (Out arguments as the call left them)",
            "expected": "the reference's outputs, by output name (float64 copies unless the spec says otherwise; at a big "
                        "point only the checked rows)",
            "mask": "True where an element failed the values check (the outputs that failed it), the output's shape"}
    for part, named in tensors.items():
        if named:
            desc = ", ".join(f"`{n}` {_describe(t)}" for n, t in named.items())
            lines.append(f"| `{part}.safetensors` | {what[part]}: {desc} |")
    if scalars:
        lines.append("| (not saved) | the other arguments, as passed: " + ", ".join(f"`{n}` = {v!r}" for n, v in scalars.items())
                     + " |")
    if point.kwargs:
        lines.append(f"| (not saved) | the call's keywords (the point's config): {point.kwargs!r} |")
    lines += ["", "Load them (safetensors, never pickle):", "", "```python",
              "from safetensors.torch import load_file",
              *[f"{p.removesuffix('.safetensors')} = load_file({p!r})" for p in written], "```", ""]
    return "\n".join(lines)


def _describe(t) -> str:
    strides = "" if t.is_contiguous() else f", strides {tuple(t.stride())} as passed"
    return f"({str(t.dtype).removeprefix('torch.')}, {' x '.join(map(str, t.shape)) or 'scalar'}{strides})"
