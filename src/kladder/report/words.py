"""The words for kladder's typed facts: every sentence a report shows about a finding, a
pattern, a note, a replay or the rows checked is made here, from typed data only, for every
renderer (terminal, JSON). Nothing here computes a verdict."""
from __future__ import annotations

from ..outcome import (
    Cause,
    Check,
    Finding,
    Note,
    NoteKind,
    Outcome,
    Pattern,
    Replay,
    RowsChecked,
    Span,
)
from ..sizes import human_bytes


# ---------------------------------------------------------------------------- patterns
def pattern_text(p: Pattern) -> str:
    """"the last 7 columns (N % 8 = 7) of every row", "rows 0..201 (whole rows)", ..."""
    if p.kind == "single":
        return "the single element"
    if p.kind == "every":
        return "every element"
    if p.kind == "elements":
        return _span_text("elements", p.cols)
    if p.kind == "block":
        rows = _rows_text(p.rows)
        if p.cols is None:
            return f"{rows} (whole rows)" if p.rows != ("every",) else "every element"
        return f"{_span_text('columns', p.cols)} of {rows}"
    if p.kind == "whole_rows":
        more = ", ..." if p.n_bad > len(p.ids) else ""
        return (f"{p.n_bad:,} whole rows of {p.n_rows:,}{' checked' if p.checked else ''} "
                f"(rows {', '.join(map(str, p.ids))}{more})")
    if p.kind == "runs":
        amount = "most elements" if p.most else "scattered elements"
        return f"{amount} of {_rows_text(p.rows)} ({p.n_bad:,} of {p.n_total:,})"
    return f"scattered, {p.n_bad:,} of {p.n_total:,} elements (first at {tuple(p.first)})"


def _rows_text(rows: tuple) -> str:
    kind = rows[0]
    if kind == "every":
        return "every row"
    if kind == "one":
        return f"row {rows[1]}"
    if kind == "from":
        return f"every row from {rows[1]} on (rows {rows[1]}..{rows[2]})"
    if kind == "range":
        return f"rows {rows[1]}..{rows[2]}"
    return "rows " + ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in rows[1])


def _span_text(unit: str, s: Span) -> str:
    k = s.last - s.first + 1
    if s.last == s.n - 1:
        text = f"the last {k} {unit}" if k > 1 else f"the last {unit[:-1]}"
        return text + (f" ({s.tile_note[0]} % {s.tile_note[1]} = {s.tile_note[2]})" if s.tile_note else "")
    if s.first == 0:
        return f"the first {k} {unit}" if k > 1 else f"the first {unit[:-1]}"
    return f"{unit} {s.first}..{s.last}"


# ---------------------------------------------------------------------------- findings
def pattern_label(f: Finding) -> str:
    """The one-line `pattern:` of a finding: where the wrong elements are, or what happened."""
    x = f.facts
    if f.pattern is not None:
        return pattern_text(f.pattern)
    labels = {Check.RAISED: "raised", Check.DEVICE_FAULT: "device fault", Check.CAPTURE: "capture failed",
              Check.HANG: "hang", Check.INVALID_REFERENCE: "invalid reference", Check.INVARIANT: "invariant",
              Check.NONFINITE: "accepted NaN/Inf"}
    if f.check in labels:
        return labels[f.check]
    if f.check == Check.GUARD:
        return "a write past the end" if x["n_after"] else "a write before the start"
    if f.check == Check.CRASHED:
        return f"crash ({x['signal']})"
    if f.check == Check.NOT_BITWISE:
        return "A after B differs from A" if x["cause"] == Cause.ABA else "warm cache differs from cold"
    if f.check == Check.MODEL:
        if x["metric"] == "nll":
            return f"NLL {x['rise']:+.1%}"
        return f"score {x['baseline']:.3f} -> {x['kernel']:.3f}"
    return ""


def describe(f: Finding) -> str:
    """The output's dtype, shape and mode: "bfloat16, 1 x 4095, eager"."""
    x = f.facts
    if "dtype" not in x:
        return ""
    return f"{x['dtype']}, {' x '.join(map(str, x['shape']))}, {x['mode']}"


def message(f: Finding) -> str:
    """The finding in one sentence: what, where, how much and what was allowed."""
    return _MESSAGES[f.check](f, f.facts)


def _values(f: Finding, x: dict) -> str:
    big = f.largest
    checked = " checked" if x.get("sampled") else ""
    msg = (f"Mismatched elements: {f.mismatched:,} / {f.total:,}{checked} ({100 * f.mismatched / max(f.total, 1):.1f}%) "
           f"in `{f.output}` ({describe(f)}): {pattern_text(f.pattern)}. Greatest difference at index {big.index}: "
           f"kernel {big.kernel!r}, reference {big.reference!r} (up to {big.allowed:.3g} allowed)")
    if x.get("nonfinite"):
        msg += f"; {x['nonfinite']:,} non-finite where the reference is finite"
    budget = budget_text(x)
    return msg + (f"; {budget}" if budget else "")


def budget_text(x: dict) -> str:
    """Which error budget applied at the greatest difference, when an honest peer was asked
    (checks/peer.py): the dtype's default, or C x a peer's error."""
    if "budget" not in x:
        return ""
    default = f"the {x['dtype'] + ' ' if x.get('dtype') else ''}default (rtol {x['rtol']:g} x max(|ref|, the row's RMS) + atol {x['atol']:g})"
    seen = "; ".join(t for t in (_spread_text(x.get("spread")), _peer_text(x.get("peer"))) if t)
    if x["budget"] == "default":
        return f"allowed: {default}; the honest peers allow no more ({seen})" if seen else f"allowed: {default}"
    what = {"spread": "the default at the scale of the terms that make the element (the rounding spread s over "
                      "the inputs' unit roundoff)",
            "peer": f"{x['c']:g} x K x s (K: the largest error of the reference run in the kernel's own precision, "
                    "in units of s)"}
    return f"allowed: {what[x['budget']]}, more than {default} ({seen})"


def _spread_text(sp: dict | None) -> str:
    if not sp:
        return ""
    draws = f", {sp['draws']} draws" if sp.get("draws") else ", the output's rounding alone"
    terms = f", terms of size {sp['terms']:.3g}" if sp.get("terms") else ""
    return f"s = {sp['at']:.3g} there (the float64 reference under rounding of every input{draws}{terms})"


def _peer_text(p: dict | None) -> str:
    if not p:
        return ""
    if "skipped" in p:
        return f"{p['skipped']:,} elements fail: no peer is asked for that many"
    if "error" in p:
        return f"the reference cannot run in the kernel's precision ({p['error']}: {p['text']})"
    if "factor" not in p:
        return ""
    capped = f", counted up to {p['cap']:g} x what the default or s allows" if p.get("capped") else ""
    return f"the reference run in {p['dtype']} is off by up to K = {p['factor']:.3g} x s{capped}"


def _contract(f: Finding, x: dict) -> str:
    if "not_tensor" in x:
        return f"`{f.output}` is a {x['not_tensor']}, not a tensor"
    if "returned" in x:
        names = x["declared"]
        return f"the kernel returned {x['returned']}; the spec declares {len(names)} outputs ({', '.join(names)})"
    if "reference_shape" in x:
        return (f"the reference returned shape {tuple(x['reference_shape'])} for `{f.output}`, "
                f"the kernel {tuple(x['kernel_shape'])}")
    parts = [f"{what} {_shown(got)} where {_shown(want)} was expected" for what, got, want in x["problems"]]
    return f"`{f.output}` has " + " and ".join(parts)


def _shown(v):
    return tuple(v) if isinstance(v, list) else v


def _guard(f: Finding, x: dict) -> str:
    parts, size = [], x["itemsize"]
    if x["n_after"]:
        a, b = x["after_lo"], x["after_hi"]
        parts.append(f"{x['n_after']} guard bytes after the end of `{f.output}` were overwritten "
                     f"(bytes {a}..{b} past the end: elements {a // size}..{b // size} past the last)")
    if x["n_before"]:
        parts.append(f"{x['n_before']} guard bytes before the start of `{f.output}` were overwritten "
                     f"(bytes {x['before_lo']}..{x['before_hi']} before it)")
    return "; ".join(parts)


def _during(f: Finding) -> str:
    return f" ({f.call})" if f.call else ""


def _raised(f: Finding, x: dict) -> str:
    return f"the kernel raised {x['error']}{_during(f)}: {x['text']}"


def _device_fault(f: Finding, x: dict) -> str:
    if x.get("in_call", True):
        return f"the kernel faulted the device{_during(f)}: {x['error']}: {x['text']}"
    return f"the device faulted: {x['error']}: {x['text']}"


def _capture(f: Finding, x: dict) -> str:
    return f"the kernel cannot be captured in a CUDA graph: {x['error']}: {x['text']}"


def _hang(f: Finding, x: dict) -> str:
    return f"the point did not finish within {x['timeout_s']:g} s; the worker's process group was killed"


def _crashed(f: Finding, x: dict) -> str:
    msg = f"the worker died with {x['signal']} while running the point"
    if x.get("frames"):
        msg += "; innermost Python frames: " + " <- ".join(x["frames"])
    return msg


def _not_bitwise(f: Finding, x: dict) -> str:
    n, total = f"{f.mismatched:,}", f"{f.total:,}"
    if x["cause"] == Cause.ABA:
        return (f"`{f.output}` of A after B differs from A's first result in {n} of {total} elements, "
                "on the same inputs: state left by B changed A")
    return (f"`{f.output}` of A differs between a cold cache and the warm cache the cold process left ({n} of {total} "
            "elements), on the same inputs: the cache handed the warm process other code")


def _padding(f: Finding, x: dict) -> str:
    return (f"`{f.output}` changed when only {x['arg']}'s padding bytes changed (zero -> {x['fill']}): "
            f"{f.mismatched:,} of {f.total:,} elements differ, {pattern_text(f.pattern)}; the kernel reads past "
            f"the {x['valid']} valid elements")


def _invalid_reference(f: Finding, x: dict) -> str:
    what = "; ".join(s for s in (x["functions"] and f"functions {', '.join(x['functions'])}",
                                 x["gpu_kernels"] and f"GPU kernels {', '.join(x['gpu_kernels'])}") if s)
    return (f"the reference runs the kernel under test ({what}); a comparison with it cannot fail when both are wrong. "
            "Write the reference in plain torch, independent of the kernel's code")


def _invariant(f: Finding, x: dict) -> str:
    if f.pattern is None:
        return f"the invariant '{x['name']}' does not hold"
    return f"the invariant '{x['name']}' fails at {f.mismatched:,} of {f.total:,} positions: {pattern_text(f.pattern)}"


def _nonfinite(f: Finding, x: dict) -> str:
    return "the kernel accepted NaN/Inf inputs and returned; the spec's policy is nonfinite='raise'"


def _model(f: Finding, x: dict) -> str:
    detail = model_detail(x)
    if x["metric"] == "nll":
        return (f"the model's answers lost likelihood: the right answers' negative log-likelihood rose {x['rise']:+.1%} "
                f"({x['nll_baseline']:.3e} -> {x['nll_kernel']:.3e} nats/token; {x['allowed']:.0%} allowed) with the "
                f"kernel in `{x['slot']}`, while exact match stayed {x['kernel_score']:.4f} (baseline "
                f"{x['baseline_score']:.4f}): the errors lean one way and compound through the layers. {detail}")
    b, k = x["baseline"], x["kernel"]
    msg = (f"the model's score fell from {b:.4f} to {k:.4f} (a drop of {b - k:.4f}; {x['allowed']} allowed) with the "
           f"kernel in its slot. {detail}")
    rows = model_samples(x)
    return msg + (". Answers: " + "; ".join(rows) if rows else "")


def model_samples(x: dict) -> list[str]:
    if x["where"] == "slot":
        return [f"{p}{want} got {got}" + ("" if got == want else "  <- wrong") for p, want, got in x["samples"]]
    return [" ".join(s) for s in x["samples"]]


def model_detail(x: dict) -> str:
    """What the model mode measured, with or without a failure."""
    if x["where"] != "slot":
        return f"score {x['kernel']:.4f} with the kernel vs {x['baseline']:.4f} baseline ({x['target']})"
    rise = x["rise"]
    ratio = x["nll_kernel"] / x["nll_baseline"] if x["nll_baseline"] else 0.0
    rise_text = f"{rise:+.1%}" if abs(rise) < 10 else f"x{ratio:.3g}"
    score_k = x.get("kernel_score", x["kernel"])
    score_b = x.get("baseline_score", x["baseline"])
    return (f"exact match {score_k:.4f} with the kernel vs {score_b:.4f} baseline; the right answers' NLL "
            f"{x['nll_kernel']:.3e} vs {x['nll_baseline']:.3e} nats/token ({rise_text}); {x['n']} problems, {x['dtype']}; "
            f"logits {x['gain']:+.2%} along the baseline's, drift {x['drift']:.2e}")


def _bias(f: Finding, x: dict) -> str:
    words = {"offset": ("above", "below"), "scale": ("away from zero from", "toward zero from")}[x["lean"]]
    side = words[0] if x["up"] > x["down"] else words[1]
    return (f"`{f.output}` leans {side} the reference: {max(x['up'], x['down']):,} of {x['up'] + x['down']:,} differing "
            f"rows (sign test p = {x['p']:.1e}); mean error {x['mean_ulps']:+.2f} ulps of {x['dtype']} "
            f"({x['rel']:+.2e} relative)" + (", and the same way against the reference run in the kernel's own precision "
                                             "(not that precision's rounding)" if x.get("peer") else "")
            + ". Inside the tolerance, but errors that lean one way compound through a model's layers")


_MESSAGES = {Check.VALUES: _values, Check.CONTRACT: _contract, Check.GUARD: _guard, Check.RAISED: _raised,
             Check.DEVICE_FAULT: _device_fault, Check.CAPTURE: _capture, Check.HANG: _hang, Check.CRASHED: _crashed,
             Check.NOT_BITWISE: _not_bitwise, Check.PADDING: _padding, Check.INVALID_REFERENCE: _invalid_reference,
             Check.INVARIANT: _invariant, Check.NONFINITE: _nonfinite, Check.MODEL: _model, Check.BIAS: _bias}


def bias_group(w: Finding) -> tuple:
    """Warnings that differ only in their numbers are shown once, with the points that showed them."""
    x = w.facts
    return (w.output, x["lean"], x["up"] > x["down"], x["dtype"])


# ---------------------------------------------------------------------------- notes
def note_text(n: Note, sized: bool = True) -> str:
    """Why a point was skipped, broken or out of memory, or what a passing mode measured.
    Without `sized`, a GPU point's size is left out (the text of a group of such skips)."""
    x = n.facts
    k = n.kind
    if k == NoteKind.GPU_POINT:
        size = f" ({human_bytes(x['need_bytes'])} of tensors)" if sized else ""
        return (f"a GPU point{size}: over the CPU budget ({x['budget']}), since the Triton interpreter runs every "
                "program in Python; climb with --device cuda")
    if k == NoteKind.NO_DEVICE_MEMORY:
        return f"needs {human_bytes(x['need_bytes'])} of tensors; the device has {human_bytes(x['free_bytes'])} free"
    if k == NoteKind.MODE_NEEDS_CUDA:
        return f"the {x['mode']} mode needs CUDA; on the CPU it is skipped, never passed"
    if k == NoteKind.RACE_NOT_SET_UP:
        return (f"the late producer finished before the call returned, {x['attempts']} times (up to "
                f"{x['delay_cycles']:,} cycles): the race could not be set up, so the stream ordering was not checked")
    if k == NoteKind.LAYOUT_REFUSED:
        return f"refused: the kernel raised {x['error']} on this layout: {x['text']}"
    if k == NoteKind.RAISED_AS_ASKED:
        return f"raised {x['error']} on NaN/Inf inputs, as the spec's policy asks"
    if k == NoteKind.INPUTS_FAILED:
        return f"building the inputs failed: {x['error']}: {x['text']}"
    if k == NoteKind.REFERENCE_RAISED:
        return f"the reference raised {x['error']}: {x['text']} (a spec problem, not a kernel failure)"
    if k == NoteKind.INVARIANT_RAISED:
        return f"the invariant '{x['name']}' raised {x['error']}: {x['text']}"
    if k == NoteKind.PROCESS_FAILED:
        return f"the {x['label']} process failed: {x['text']}"
    if k == NoteKind.NO_SUCH_SLOT:
        return f"Spec.slot {x['slot']!r}: kladder's model has the slots {', '.join(x['slots'])}"
    if k == NoteKind.BASELINE_FAILED:
        what = "the user model's baseline evaluation failed" if x["user"] else "the baseline model run failed"
        return f"{what}: {x['error']}: {x['text']}"
    if k == NoteKind.WORKER_EXITED:
        return f"the worker exited with status {x['code']} without an answer: {x['stderr']}"
    if k == NoteKind.KERNEL_OOM:
        during = f" ({x['call']})" if x["call"] else ""
        return f"the kernel ran out of memory{during}: {x['text']}"
    if k == NoteKind.INPUTS_OOM:
        return f"the inputs or the reference ran out of memory: {x['text']}"
    if k == NoteKind.MODEL_SCORES:
        return model_detail(x)
    if k == NoteKind.CACHE_FILES:
        return f"the cold process left {x['files']} file(s) in the cache directory"
    if k == NoteKind.INTERPRETER_DEFECT:
        return (f"not judged on the CPU: the Triton interpreter {INTERPRETER_FEATURES[x['feature']]} (its probe: "
                f"{x['what']} of {x['x']} gave {x['got']}, not {x['want']}) and the kernel's calls use it; "
                "climb with --device cuda")
    if k == NoteKind.INTERPRETER_ERROR:
        same = f" (its probe of {INTERPRETER_PROBES[x['probe']]} raised the same)" if x.get("probe") else ""
        return (f"not judged on the CPU: the Triton interpreter raised {x['error']}: {x['text']}{same}; "
                "climb with --device cuda")
    return _FIXED[k]


INTERPRETER_FEATURES = {
    "bf16_arithmetic": "computes bfloat16 arithmetic on the raw uint16 bits",
    "bf16_rounding": "truncates float32 -> bfloat16 where a GPU rounds to nearest, and the failure is within the "
                     "one bfloat16 ulp that truncation adds",
    "fp8_cast": "converts to and from fp8 wrongly",
    "libdevice": "returns None from libdevice calls",
    "runtime_loop": "raises inside loops over a runtime bound",
}
INTERPRETER_PROBES = {"libdevice": "a libdevice call", "runtime_loop": "a `for start in range(0, N, BLOCK)` loop"}


_FIXED = {
    NoteKind.NO_OUT_ARGS: "no out-arguments: the kernel allocates its outputs, so there is no buffer to reuse",
    NoteKind.NOT_TORCH_OP: "the kernel is a Python launcher, not a torch op or custom op (torch.library.custom_op): "
                           "torch.compile would run it as it is, eagerly",
    NoteKind.OUTSIDE_CLIMB: "the jitcache mode runs inside a climb's worker (it starts two processes of its own)",
}


def note_group(n: Note) -> tuple:
    """Skips whose notes differ only in a point's size are one group."""
    facts = {k: v for k, v in n.facts.items() if not (n.kind == NoteKind.GPU_POINT and k == "need_bytes")}
    return (n.kind, tuple(sorted((k, str(v)) for k, v in facts.items())))


def replay_text(o: Outcome) -> str:
    if o.replay == Replay.FAILED_AGAIN:
        return "replayed: failed again"
    if o.replay == Replay.FLAKY:
        return f"failed 1 of 2 runs (the replay {o.replay_status}): a race or uninitialised state, not rounding"
    return ("passes when run alone in a fresh process: this failure depends on state left by earlier points in the "
            "same worker (rung 4's A-B-A gap); its repro command will pass")


def reason(o: Outcome) -> str:
    """The outcome's one reason: what a replay showed, else its note."""
    if o.replay is not None:
        return replay_text(o)
    return note_text(o.note) if o.note is not None else ""


def rows_text(r: RowsChecked) -> str:
    return (f"{r.checked:,} of {r.rows:,} rows of {r.dim}: the first and last tiles, the tiles at each 2^31 / 2^32 "
            f"byte boundary, and {r.sampled} sampled")
