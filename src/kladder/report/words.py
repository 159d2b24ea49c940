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
def pattern_shape(f: Finding) -> tuple:
    """What a finding's pattern looks like, its numbers left out: failures with one shape
    are one bug seen at several points."""
    p, x = f.pattern, f.facts
    if p is not None:
        cols = None
        if p.cols is not None:
            at = "last" if p.cols.last == p.cols.n - 1 else "first" if p.cols.first == 0 else "range"
            cols = (at, p.cols.tile_note[:2] if p.cols.tile_note else None)
        return (p.kind, cols, p.rows[0] if p.rows else None, p.most)
    keys = {Check.RAISED: ("error", "text"), Check.DEVICE_FAULT: ("error", "text"), Check.CAPTURE: ("error", "text"),
            Check.UNCAPTURED: ("error", "text"), Check.INPUT_CHANGED: ("how",),
            Check.CRASHED: ("signal", "exit_status"), Check.NOT_BITWISE: ("cause",), Check.INVARIANT: ("name",),
            Check.MODEL: ("metric",), Check.INVALID_REFERENCE: ("functions", "gpu_kernels")}
    if f.check == Check.GUARD:
        return (bool(x.get("n_after")), bool(x.get("n_before")))
    if f.check == Check.CONTRACT:
        return tuple(sorted(k for k in x if k != "problems")) + tuple(p[0] for p in x.get("problems", []))
    return tuple(str(x.get(k)) for k in keys.get(f.check, ()))


def pattern_shape_text(f: Finding) -> str | None:
    """The pattern of a group of failures in general words ("the last N % 8 columns of every
    row"), or None when the representative's own pattern says it best."""
    p = f.pattern
    if p is None or p.cols is None or not p.cols.tile_note or p.cols.last != p.cols.n - 1:
        return None
    sym, tile, _ = p.cols.tile_note
    unit = "columns" if p.kind == "block" else "elements"
    span = f"the last {sym} % {tile} {unit}"
    return span if p.kind == "elements" else f"{span} of {_rows_text(p.rows)}"


def points_text(outcomes: list[Outcome]) -> str:
    """The points a group of failures stands for: how many, and where their dims sit
    ("21 points: M = 1..4096, N = 7..16383 (N % 8 != 0); bfloat16, float16")."""
    dims: dict[str, list[int]] = {}
    for o in outcomes:
        for d, v in o.point.dims:
            dims.setdefault(d, []).append(v)
    parts = []
    notes = {o.headline.pattern.cols.tile_note[:2] for o in outcomes
             if o.headline and o.headline.pattern and o.headline.pattern.cols and o.headline.pattern.cols.tile_note}
    for d, vs in dims.items():
        lo, hi = min(vs), max(vs)
        text = f"{d} = {lo}" if lo == hi else f"{d} = {lo}..{hi}"
        text += "".join(f" ({d} % {t} != 0)" for sym, t in sorted(notes) if sym == d and lo != hi)
        parts.append(text)
    dtypes = sorted({v for o in outcomes for _, v in o.point.dtypes})
    configs = {o.point.config for o in outcomes}
    tail = ("; " + ", ".join(dtypes)) if len(dtypes) > 1 else ""
    tail += f"; {len(configs)} configs" if len(configs) > 1 else ""
    return f"{len(outcomes)} points: " + ", ".join(parts) + tail


def pattern_label(f: Finding) -> str:
    """The one-line `pattern:` of a finding: where the wrong elements are, or what happened."""
    x = f.facts
    if f.check in (Check.REPEATS, Check.NONDETERMINISTIC):
        what = "not bit for bit the first call" if x["bitwise"] else "wrong"
        worst = f"; the worst: {pattern_text(f.pattern)}" if f.pattern is not None else ""
        return f"{_count(f)} of {x['compared']:,} calls {what}{worst}"
    if f.pattern is not None:
        return pattern_text(f.pattern)
    labels = {Check.RAISED: "raised", Check.DEVICE_FAULT: "device fault", Check.CAPTURE: "capture failed",
              Check.UNCAPTURED: "not capturable (graphs not claimed)",
              Check.HANG: "hang", Check.INVALID_REFERENCE: "invalid reference", Check.INVARIANT: "invariant",
              Check.NONFINITE: "accepted NaN/Inf", Check.DISPATCH: "another path ran",
              Check.FLAG_NO_EFFECT: "the flag changes no code", Check.IMPORT_CONTRACT: "import contract",
              Check.CAUGHT_IMPORT: "a caught ImportError"}
    if f.check in labels:
        return labels[f.check]
    if f.check == Check.GUARD:
        return "a write past the end" if x["n_after"] else "a write before the start"
    if f.check == Check.CRASHED:
        return f"crash ({x['signal']})" if "signal" in x else f"crash (exit status {x['exit_status']})"
    if f.check == Check.NOT_BITWISE:
        return {Cause.ABA: "A after B differs from A", Cause.CACHEKEY: "B on A's cache differs from B on an empty one"}.get(
            x["cause"], "warm cache differs from cold")
    if f.check == Check.MODEL:
        if x["metric"] == "nll":
            return f"NLL {x['rise']:+.1%}"
        return f"score {x['baseline']:.3f} -> {x['kernel']:.3f}"
    if f.check == Check.COLLECTIVE:
        return f"{f.mismatched:,} of {f.total:,} calls wrong"
    if f.check == Check.RANKS_HUNG:
        return "hang (watchdog)"
    if f.check == Check.SANITIZER:
        return f"{x['tool']}: {_sanitizer_kind(x)}"
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
    most = (f"the larger of {p['cap']:g} x what the default or s allows and sqrt(u) of the element's scale "
            f"(half its {p['dtype']} digits)" if "half_digits" in p else f"{p['cap']:g} x what the default or s allows")
    capped = f", counted up to {most}" if p.get("capped") else ""
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
    what, own = _guarded_what(f, x.get("allocated"))
    if x["n_after"]:
        a, b = x["after_lo"], x["after_hi"]
        parts.append(f"{x['n_after']} guard bytes after the end of {what} were overwritten "
                     f"(bytes {a}..{b} past the end: elements {a // size}..{b // size} past the last)")
    if x["n_before"]:
        parts.append(f"{x['n_before']} guard bytes before the start of {what} were overwritten "
                     f"(bytes {x['before_lo']}..{x['before_hi']} before it)")
    return "; ".join(parts) + own


def _guarded_what(f: Finding, alloc: dict | None) -> tuple[str, str]:
    """The guarded tensor's name, and for one the kernel allocated itself, how it did."""
    if not alloc:
        return f"`{f.output}`", ""
    made = f" (the kernel allocated it with torch.{alloc['op']}: {tuple(alloc['shape'])} {alloc['dtype']})"
    if alloc["returned"]:
        return f"`{f.output}`", made
    return f"the kernel's scratch allocation torch.{alloc['op']} {tuple(alloc['shape'])} {alloc['dtype']}", ""


def _during(f: Finding) -> str:
    return f" ({f.call})" if f.call else ""


def _raised(f: Finding, x: dict) -> str:
    return f"the kernel raised {x['error']}{_during(f)}" + (f": {x['text']}" if x["text"] else " (with no message)")


def _device_fault(f: Finding, x: dict) -> str:
    if x.get("in_call", True):
        return f"the kernel faulted the device{_during(f)}: {x['error']}: {x['text']}"
    return f"the device faulted: {x['error']}: {x['text']}"


def _capture(f: Finding, x: dict) -> str:
    claimed = " (the spec claims it runs in graphs: Spec(graphs=True))" if x.get("claimed") else ""
    return f"the kernel cannot be captured in a CUDA graph{claimed}: {x['error']}: {x['text']}"


def _uncaptured(f: Finding, x: dict) -> str:
    return (f"the kernel cannot be captured in a CUDA graph: {x['error']}: {x['text']}; not failed, since the spec "
            "does not say production graphs it (Spec(graphs=True) makes this a failure, graphs=False skips "
            "the point); its eager call before the capture was judged")


def _input_changed(f: Finding, x: dict) -> str:
    if "resized" in x:
        was, now = x["resized"]
        return (f"the kernel changed its input `{f.output}` from shape {tuple(was)} to {tuple(now)}, or its dtype; the "
                "spec declares no mutation")
    parts = []
    if f.mismatched:
        unit = "rows" if x["how"] == "hash" else "elements"
        where = f" ({pattern_text(f.pattern)})" if f.pattern is not None else ""
        parts.append(f"{f.mismatched:,} of {f.total:,} {unit}{where}")
    if x["gap_bytes"]:
        parts.append(f"{x['gap_bytes']:,} bytes between its elements (memory a strided view's parent owns)")
    hashed = (f"; {x['slabs']} of {x['of']} slabs of rows hashed before the call differ after it" if x["how"] == "hash"
              else "")
    return (f"the kernel changed its input `{f.output}`: {' and '.join(parts)} differ from what it was passed{hashed}; "
            "the spec declares no mutation (kl.Tensor(..., mutated=True) if the kernel writes it by design)")


def _hang(f: Finding, x: dict) -> str:
    if x.get("watchdog"):
        return (f"{f.call} did not finish within {x['timeout_s']:g} s (the batch's watchdog): a kernel that spins or "
                "waits on what never comes; the worker was replaced")
    return (f"the kernel's calls did not finish within {x['timeout_s']:g} s (kladder's own stages are timed apart); "
            "the worker's process group was killed")


def status_word(s) -> str:
    """A status as a reader says it: "not judged" for not_judged, else its value."""
    return str(s).replace("_", " ")


STAGE_WORDS = {"inputs": "building the inputs", "kernel": "the kernel's calls", "reference": "the float64 reference",
               "peers": "the honest peer (the reference in the kernel's precision and its spread draws)",
               "checks": "the checks (guards, contract, comparison, pattern)"}
FIRST_WORDS = {"hang": "hung", "crashed": "crashed", "device_fault": "faulted the device", "oom": "ran out of memory"}


def load_text(x: dict) -> str:
    """What else used the device or the host while a point ran (a Load's facts)."""
    parts = []
    if x.get("processes"):
        parts.append(f"{x['processes']} other process{'es' if x['processes'] > 1 else ''} on the device")
    if x.get("device_used_bytes"):
        total = f" of {human_bytes(x['device_total_bytes'])}" if x.get("device_total_bytes") else ""
        parts.append(f"{human_bytes(x['device_used_bytes'])}{total} in use by others")
    if x.get("lanes"):
        parts.append(f"{x['lanes']} other lane{'s' if x['lanes'] > 1 else ''} of this climb running")
    if x.get("host_cpu_s"):
        parts.append(f"other processes used {x['host_cpu_s']:.1f} s of CPU in its {x['seconds']:.1f} s")
    return ", ".join(parts) or "other work on the host"


def _under_load(f: Finding, x: dict) -> str:
    return (f"{FIRST_WORDS.get(x['first'], x['first'])} under load ({load_text(x)}); passed alone in "
            f"{x['alone_s']:.1f} s: not the kernel's failure")


def _crashed(f: Finding, x: dict) -> str:
    rank = f"rank {x['rank']}'s process" if "rank" in x else None
    if "signal" in x:
        msg = f"{rank or 'the worker'} died with {x['signal']} while running the point{_during(f)}"
    else:
        msg = (f"the kernel ended {rank or 'the worker process'} with exit status {x['exit_status']} (sys.exit or os._exit) "
               f"while running the point{_during(f)}")
    if x.get("frames"):
        msg += "; innermost Python frames: " + " <- ".join(x["frames"])
    if x.get("heap_checked"):
        msg += "; it crashed again alone, in a fresh worker with glibc's malloc checks on"
    return msg


def _crashed_not_alone(f: Finding, x: dict) -> str:
    glibc = f" ({x['heap_words']})" if x["heap_words"] else ""
    n = x["earlier"]
    where = f" after {n:,} other point{'s' if n != 1 else ''} in it" if n else ""
    return (f"the worker died with {x['signal']}{glibc}{where}, as damage to its heap does; alone, in a fresh "
            f"worker with glibc's malloc checks on, the point {x['alone']}: the damage was not this point's")


def _not_bitwise(f: Finding, x: dict) -> str:
    n, total = f"{f.mismatched:,}", f"{f.total:,}"
    if x["cause"] == Cause.ABA:
        return (f"`{f.output}` of A after B differs from A's first result in {n} of {total} elements, "
                "on the same inputs: state left by B changed A")
    if x["cause"] == Cause.CACHEKEY:
        return (f"`{f.output}` of B ({x['variant']}) in a process on the cache A left differs from B on an empty cache "
                f"({n} of {total} elements), on the same inputs: the cache key leaves out what B changed, so the "
                "restarted process got A's code")
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


# ---------------------------------------------------------------------------- rung 7
def launch_text(x: dict) -> str:
    """A Triton launch: `_decode_kernel(BLOCK_N=64, num_warps=4)`."""
    params = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in x["params"].items())
    return f"{x['name']}({params})"


def _some(names: list, total: int) -> str:
    more = f", ... ({total} in all)" if total > len(names) else ""
    return ", ".join(names) + more


def ran_text(x: dict) -> str:
    """What a call ran: its Triton launches, GPU kernels and Python functions."""
    parts = []
    if x["launches"]:
        parts.append("Triton " + _some([launch_text(l) for l in x["launches"]], x["n_launches"]))
    if x["gpu"]:
        parts.append("GPU kernels " + _some([g[:80] for g in x["gpu"]], x["n_gpu"]))
    if x["functions"]:
        parts.append("Python " + _some(x["functions"], x["n_functions"]))
    return "; ".join(parts) or "no Triton kernel, GPU kernel or Python function of the kernel's own"


def expect_text(e: dict) -> str:
    what = f"`{e['kernel']}`" + (f" launched with {', '.join(f'{k}={v}' for k, v in e['launch'].items())}" if e["launch"] else "")
    return f"{e['label']} ({what})" if e["label"] else what


def _dispatch(f: Finding, x: dict) -> str:
    wanted = "; ".join(expect_text(e) for e in x["expected"])
    return (f"expected {wanted} to run here, and it did not: the call took another path. Ran instead: "
            f"{ran_text(x['ran'])}")


def _flag_no_effect(f: Finding, x: dict) -> str:
    seen = {"binary": "the same compiled binaries", "source": "the same code (kernel source and the constexprs it "
            "reads, argument specialisation, launch options: Triton's interpreter compiles nothing)",
            "names": "the same GPU kernels"}[x["how"]]
    ran = "; ".join(f"{x['flag']}={r['value']!r} ran " + (", ".join(launch_text(l) for l in r["launches"])
                                                         or ", ".join(g[:80] for g in r["gpu"])) for r in x["runs"])
    return (f"the flag {x['flag']} changes nothing: its values {', '.join(map(repr, x['values']))} all ran {seen}. "
            f"{ran}. The flag never reaches code generation, so no test can tell it on from off")


def _import_contract(f: Finding, x: dict) -> str:
    if x["problem"] == "missing":
        return (f"downstream code imports {x['name']}, and it does not resolve: {x['error']}: {x['text']}. "
                "A copy that imports it breaks, or falls back quietly")
    return (f"downstream code imports {x['name']}, which resolves to {x['object']}, and the kernel's call never runs it: "
            "the spec tests another object than the one downstream code uses")


def _caught_import(f: Finding, x: dict) -> str:
    return (f"importing `{x['module']}` raised {x['error']} at {x['where']} ({x['text']}) and caught it: the module "
            "took another path and said nothing; rung 7's dispatch points show which kernels ran instead")


def _collective(f: Finding, x: dict) -> str:
    lag = x["lag"]
    ranks = "; ".join(f"rank {r}{' (lagging)' if int(r) == lag else ''} in {_calls_text(calls, x['queued'])}"
                      for r, calls in x["ranks"].items())
    dim = x["dim"]
    where = (f"at every size of {dim}" if x["sizes_wrong"] == x["sizes"] else
             f"only at {dim} = {_ints(x['sizes_wrong'])} (of {_ints(x['sizes'])})")
    return (f"{f.mismatched:,} of {f.total:,} outputs wrong ({_ratio(f.mismatched, f.total)}) over {x['world']} ranks "
            f"and {x['queued']} calls queued before one synchronisation, {where}: {ranks}. The collective completed "
            f"and returned {' and '.join(_WRONG_KIND.get(k, k) for k in x['kinds'])}; the first wrong call of each "
            "rank follows")


_WRONG_KIND = {"values": "wrong values", "guard": "writes past its tensors (guard bytes)",
               "contract": "outputs of the wrong dtype, shape or device"}


def _calls_text(calls: list, queued: int) -> str:
    if not calls:
        return "none of its calls"
    shown = ", ".join(map(str, calls[:8])) + (f" and {len(calls) - 8} more" if len(calls) > 8 else "")
    return f"{len(calls)} of {queued} calls ({shown})"


def _ints(v: list) -> str:
    return ", ".join(f"{i:,}" for i in v)


def _ratio(n: int, total: int) -> str:
    return f"{100 * n / max(total, 1):.0f}%"


def _ranks_hung(f: Finding, x: dict) -> str:
    places = "; ".join(_place_text(p, x) for p in x["ranks"])
    return (f"the collective hung: no rank made progress for {x['waited_s']:g} s (watchdog {x['watchdog_s']:g} s), "
            f"and the ranks were killed: {places}")


def _place_text(p: dict, x: dict) -> str:
    who = f"rank {p['rank']}{' (lagging)' if p['rank'] == x['lag'] else ''}"
    n, phase, done = x["queued"], p["phase"], p["finished"]
    size = f" ({x['dim']} = {p['size']:,})" if p.get("size") is not None else ""
    if phase == "calls":
        where = f"in call {done + 1} of {n}{size}" if p["launched"] > done else f"before call {done + 1} of {n}{size}"
        return f"{who} stopped {where}, {done} finished"
    if phase == "sync":
        return f"{who} had queued all {n} calls; call {done + 1}{size} never finished"
    if phase == "done":
        return f"{who} had finished every call"
    if phase == "setup":
        return f"{who} stopped in setup (building its communicator)"
    return f"{who} stopped in its {phase} phase"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _count(f: Finding) -> str:
    x = f.facts
    return f"{x['differ'] if x['bitwise'] else x['wrong']:,}"


def _rate_text(x: dict) -> str:
    """"rate 7.0e-05 (95% CI 2.8e-05 to 1.4e-04); even odds of seeing it take 9,903 calls, 95% 42,796"."""
    conf = f"{x['conf']:.0%}"
    return (f"rate {x['rate']:.2g} ({conf} CI {x['lo']:.2g} to {x['hi']:.2g}); a rate like it is seen with even odds "
            f"in {x['calls_50']:,} calls and with 95% odds in {x['calls_95']:,}")


def _how(x: dict) -> str:
    """How the calls ran: "graph replays, fresh inputs from a pool of 8, under load"."""
    parts = ["graph replays" if x["launch"] == "graph" else "eager calls"]
    if x.get("fallback"):
        parts[0] = "eager calls (the kernel cannot be captured in a CUDA graph: " \
                   f"{x['fallback']['error']}: {x['fallback']['text']})"
    parts.append(f"fresh inputs from a pool of {x['firsts']}" if x["inputs"] == "fresh" else "the same inputs")
    if x["load"]:
        parts.append("beside a second stream of work")
    parts.append(f"{x['calls']:,} calls in {x['seconds']:.3g} s" + (" (the time budget ended it)" if x["stopped"] == "seconds" else ""))
    return ", ".join(parts)


def _repeats(f: Finding, x: dict) -> str:
    n = f"{x['compared']:,}"
    if x["bitwise"]:
        head = (f"{x['differ']:,} of {n} calls differ bit for bit from the first call on the same inputs"
                + (", although the spec declares deterministic=True" if x["deterministic"] else ""))
    else:
        head = (f"{x['wrong']:,} of {n} calls were wrong: beyond the tolerance of the first call on the same inputs, "
                "itself judged against the reference")
    return f"{head}. {_cap(_how(x))}. {_cap(_rate_text(x))}; {_worst_text(f, x)}"


def _worst_text(f: Finding, x: dict) -> str:
    first = ", ".join(f"{c:,}" for c in x["first_calls"])
    if x["against"] == "reference" and f.pattern is not None:
        big = f.largest
        return (f"first at calls {first}; the worst, call {x['worst_call']:,}, against the reference: "
                f"{f.mismatched:,} / {f.total:,} elements of `{f.output}` wrong, {pattern_text(f.pattern)}; greatest "
                f"difference at index {big.index}: kernel {big.kernel!r}, reference {big.reference!r} "
                f"(up to {big.allowed:.3g} allowed)")
    if f.pattern is not None:
        return (f"first at calls {first}; the worst, call {x['worst_call']:,}: {f.mismatched:,} / {f.total:,} elements "
                f"of `{f.output}` differ from the first call's, {pattern_text(f.pattern)}, by up to {f.max_abs_err:.3g}")
    return f"first at calls {first}"


def _nondeterministic(f: Finding, x: dict) -> str:
    return (f"`{f.output}` is not bit for bit reproducible: {x['differ']:,} of {x['compared']:,} calls differ from the "
            f"first call on the same inputs, all within the tolerance (nondeterminism, not a failure: the spec leaves "
            f"deterministic=False). {_cap(_how(x))}. {_cap(_rate_text(x))}; "
            f"{_worst_text(f, x)}")


def _sanitizer_kind(x: dict) -> str:
    k = x["kind"]
    if k == "race":
        second = x.get("second") or {}
        return f"a {x['access']}-{second.get('access', '?')} race in shared memory"
    if k == "unread":
        return f"{x['count']:,} errors in a report kladder could not read"
    if k in ("invalid", "uninitialized", "misaligned"):
        word = {"invalid": "out-of-bounds", "uninitialized": "uninitialized", "misaligned": "misaligned"}[k]
        return f"{word} {x['access']} of {x['size']} bytes"
    return x["text"]


def _at(rec: dict) -> str:
    where = f"{rec['file']}:{rec['line']}" if rec.get("file") else "no source line (compile with line info)"
    return f"`{rec['kernel'] or '?'}` at {where}"


def _sanitizer(f: Finding, x: dict) -> str:
    if x["kind"] == "unread":
        return (f"compute-sanitizer {x['tool']} counted {x['count']:,} errors, in a report kladder could not read; "
                "run the point with `kladder repro ... --sanitize` and read the tool's own output")
    times = f" ({x['count']:,} reports)" if x["count"] > 1 else ""
    if x["kind"] == "race":
        second = x.get("second") or {}
        msg = (f"racecheck: a race in shared memory between a {x['access']} in {_at(x)} and a {second.get('access', '?')} "
               f"in {_at(second)}{times}, between threads of one program with no barrier between them")
    else:
        msg = f"{x['tool']}: {_sanitizer_kind(x)} in {_at(x)}{times}"
        if x.get("thread"):
            msg += f", e.g. thread ({x['thread']}) of block ({x['block']})"
        if x.get("address"):
            msg += f", address {x['address']}" + (f" {x['detail']}" if x.get("detail") else "")
    return msg + f". {CANNOT_SEE[x['tool']]}"


CANNOT_SEE = {
    "memcheck": "memcheck sees accesses outside every live allocation (the caching allocator off, no guard bytes); "
                "it cannot see a store that lands inside another live tensor, nor a wrong value",
    "racecheck": "racecheck covers shared memory only: a handshake between programs through global memory (a flag, "
                 "a counter, a missing fence) is invisible to it; rung 5's repetition is the check for that",
    "initcheck": "initcheck sees device reads of global memory nothing wrote; memory kladder filled (the inputs, the "
                 "poisoned out-arguments) counts as written",
    "synccheck": "synccheck sees barriers used wrongly (divergent, invalid); it cannot see a barrier that is missing",
}


_MESSAGES = {Check.VALUES: _values, Check.CONTRACT: _contract, Check.GUARD: _guard, Check.RAISED: _raised,
             Check.DEVICE_FAULT: _device_fault, Check.CAPTURE: _capture, Check.HANG: _hang, Check.CRASHED: _crashed,
             Check.UNCAPTURED: _uncaptured, Check.INPUT_CHANGED: _input_changed,
             Check.NOT_BITWISE: _not_bitwise, Check.PADDING: _padding, Check.INVALID_REFERENCE: _invalid_reference,
             Check.INVARIANT: _invariant, Check.NONFINITE: _nonfinite, Check.MODEL: _model, Check.BIAS: _bias,
             Check.DISPATCH: _dispatch, Check.FLAG_NO_EFFECT: _flag_no_effect, Check.IMPORT_CONTRACT: _import_contract,
             Check.CAUGHT_IMPORT: _caught_import,
             Check.COLLECTIVE: _collective, Check.RANKS_HUNG: _ranks_hung,
             Check.REPEATS: _repeats, Check.NONDETERMINISTIC: _nondeterministic, Check.SANITIZER: _sanitizer,
             Check.UNDER_LOAD: _under_load, Check.CRASHED_NOT_ALONE: _crashed_not_alone}


def bias_group(w: Finding) -> tuple:
    """Warnings that differ only in their numbers are shown once, with the points that showed them."""
    x = w.facts
    if w.check == Check.NONDETERMINISTIC:      # a rate differs point by point: one line per output
        return (str(w.check), w.output, x.get("tool", ""), x.get("kind", ""))
    if w.check != Check.BIAS:
        return (str(w.check), tuple(sorted((k, str(v)) for k, v in x.items())))
    return (w.output, x["lean"], x["up"] > x["down"], x["dtype"])


# ---------------------------------------------------------------------------- notes
def note_text(n: Note, sized: bool = True) -> str:
    """Why a point was skipped, broken or out of memory, or what a passing mode measured.
    Without `sized`, a GPU point's size is left out (the text of a group of such skips)."""
    x = n.facts
    k = n.kind
    if k == NoteKind.INPUTS_MUTATED:
        return (f"the kernel writes {', '.join(x['args'])} in place (mutated=True): each call on the same buffers is "
                "another computation, so repeating it cannot be held to the first call's bits; rung 5 does not "
                "repeat kernels with declared mutated inputs (rungs 1-4 judge the mutation)")
    if k == NoteKind.GPU_POINT:
        size = f" ({human_bytes(x['need_bytes'])} of tensors)" if sized else ""
        return (f"a GPU point{size}: over the CPU budget ({x['budget']}), since the Triton interpreter runs every "
                "program in Python; climb with --device cuda")
    if k == NoteKind.NO_DEVICE_MEMORY:
        return f"needs {human_bytes(x['need_bytes'])} of tensors; the device has {human_bytes(x['free_bytes'])} free"
    if k == NoteKind.MODE_NEEDS_CUDA:
        return f"the {x['mode']} mode needs CUDA; on the CPU it is skipped, never passed"
    if k == NoteKind.GRAPHS_NOT_CLAIMED:
        return (f"the kernel cannot be captured in a CUDA graph ({x['error']}: {x['text']}), and the spec says production "
                "does not run it in graphs (Spec(graphs=False)): skipped, never passed")
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
    if k == NoteKind.REFERENCE_NAN:
        return (f"the reference returned NaN at {x['count']:,} of {x['total']:,} elements of `{x['output']}` (the first at "
                f"{tuple(x['at'])}) where every input is finite and the kernel's output is not NaN: the reference's fault "
                "(a spec problem), not a kernel failure")
    if k == NoteKind.INVARIANT_RAISED:
        return f"the invariant '{x['name']}' raised {x['error']}: {x['text']}"
    if k == NoteKind.PROCESS_FAILED:
        return f"the {x['label']} process failed: {x['text']}"
    if k == NoteKind.NO_SUCH_SLOT:
        return f"Spec.slot {x['slot']!r}: kladder's model has the slots {', '.join(x['slots'])}"
    if k == NoteKind.BASELINE_FAILED:
        what = "the user model's baseline evaluation failed" if x["user"] else "the baseline model run failed"
        return f"{what}: {x['error']}: {x['text']}"
    if k == NoteKind.KLADDER_ERROR:
        return (f"kladder's own error, not the kernel's: {x['error']}: {x['text']} (please report it, with this "
                f"trace: {x['trace'].strip()})")
    if k == NoteKind.KERNEL_OOM:
        during = f" ({x['call']})" if x["call"] else ""
        return f"the kernel ran out of memory{during}: {x['text']}"
    if k == NoteKind.INPUTS_OOM:
        return f"the inputs or the reference ran out of memory: {x['text']}"
    if k == NoteKind.STAGE_OVERRUN:
        at = f" at {x['elements']:,} elements" if x.get("elements") else ""
        return (f"kladder's own stage, {STAGE_WORDS.get(x['stage'], x['stage'])}, was still running after "
                f"{x['seconds']:g} s{at} (its budget: {x['budget_s']:g} s; the kernel's calls get {x['timeout_s']:g} s): "
                "not judged, and not the kernel's hang; give it more time with --timeout or the spec's timeout_s "
                "(kladder's stages get a multiple of it)")
    if k == NoteKind.DEVICE_FULL:
        alone = {"passed": "passed alone", "oom": "ran out of memory alone too, others still holding memory"}.get(
            x["alone"], f"was {status_word(x['alone'])} alone")
        return (f"the device was full: out of memory ({x['text']}) while {load_text(x)}; it {alone} "
                f"(in {x['alone_s']:.1f} s)")
    if k == NoteKind.MODEL_SCORES:
        return model_detail(x)
    if k == NoteKind.CACHE_FILES:
        return f"the cold process left {x['files']} file(s) in the cache directory"
    if k == NoteKind.RAN:
        return "ran " + ran_text(x)
    if k == NoteKind.FLAG_CHANGED:
        seen = {"binary": "compiled binaries", "source": "code (the interpreter's model)", "names": "GPU kernels"}[x["how"]]
        return f"the flag {x['flag']} changes the code: {x['codes']} distinct sets of {seen} over its values {', '.join(map(repr, x['values']))}"
    if k == NoteKind.FLAG_NOT_VISIBLE:
        return (f"the flag {x['flag']}: no Triton kernel ran, and the CPU has no profiler to name GPU kernels, so "
                "whether it changes the code cannot be seen here; climb with --device cuda")
    if k == NoteKind.NOT_COMPILED:
        return ("under Triton's interpreter nothing is compiled, so a compiler setting changes no code object here; "
                "climb with --device cuda")
    if k == NoteKind.IMPORTS_CHECKED:
        names = ", ".join(x["names"]) or "none declared"
        traced = ", ".join(x["traced"]) or "none importable by name"
        return f"imports checked: {names}; modules imported afresh under the tracer: {traced}"
    if k == NoteKind.CACHE_MISSED:
        return (f"B ({x['variant']}) on the cache A left matched B on an empty cache; the warm process added "
                f"{x['files_added']} file(s) to the {x['files_cold']} A left")
    if k == NoteKind.COLLECTIVE_NEEDS_CUDA:
        return (f"the collective runs only on CUDA ranks (Collective(needs='cuda')): its {x['world']} ranks are "
                "skipped on the CPU, never passed")
    if k == NoteKind.NOT_ENOUGH_GPUS:
        return (f"{x['world']} ranks need {x['world']} GPUs, one each (the spec does not declare "
                f"Collective(share_device=True)); this host has {x['gpus']}")
    if k == NoteKind.RANK_FAILED:
        return (f"rank {x['rank']} failed in its {x['phase']} phase, outside the kernel's calls: {x['error']}: "
                f"{x['text']} (kladder's side or the spec's, not a kernel failure)")
    if k == NoteKind.COLLECTIVE_CALLS:
        return (f"{x['world']} ranks x {x['queued']} queued calls, every output right; rank {x['lag']} lagged "
                f"{x['lag_us']} us before each call; {x['dim']} = {_ints(x['sizes'])}; reference over "
                f"{x['backend']}; {x['seconds']:.1f} s")
    if k == NoteKind.OUTSIDE_CLIMB:
        return f"the {x['mode']} mode runs inside a climb's worker (it starts processes of its own)"
    if k == NoteKind.REPEATS_CLEAN:
        return repeats_clean_text(x)
    if k == NoteKind.SANITIZER_CLEAN:
        return f"compute-sanitizer {x['tool']}: no errors in {x['calls']} calls. {CANNOT_SEE[x['tool']]}"
    if k == NoteKind.NO_SANITIZER:
        return (f"compute-sanitizer was not found (searched {', '.join(x['searched'])}): the {x['tool']} check did not "
                "run; install the CUDA toolkit's compute-sanitizer or put it on PATH")
    if k == NoteKind.INTERPRETER_DEFECT:
        return (f"not judged on the CPU: the Triton interpreter {INTERPRETER_FEATURES[x['feature']]} (its probe: "
                f"{x['what']} of {x['x']} gave {x['got']}, not {x['want']}) and the kernel's calls use it; "
                "climb with --device cuda")
    if k == NoteKind.INTERPRETER_ERROR:
        same = f" (its probe of {INTERPRETER_PROBES[x['probe']]} raised the same)" if x.get("probe") else ""
        return (f"not judged on the CPU: the Triton interpreter raised {x['error']}: {x['text']}{same}; "
                "climb with --device cuda")
    return _FIXED[k]


def repeats_clean_text(x: dict) -> str:
    """What a passing rung-5 point proved: "0 of 200,000 calls differ ...: p < 1.5e-05 at 95%"."""
    bound = f"p < {x['bound']:.2g} at {x['conf']:.0%}"
    if not x["differ"]:
        return f"0 of {x['compared']:,} calls differ from the first call on the same inputs: {bound} that a call does; {_how(x)}"
    return (f"0 of {x['compared']:,} calls wrong ({x['differ']:,} differ within the tolerance): {bound} that a call is "
            f"wrong; {_how(x)}")


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


# ---------------------------------------------------------------------------- the environment
ENV_SHOWN = 4


def fingerprint_text(fp: dict) -> str:
    """The environment in one line: "python 3.11.7, torch 2.13.0+cpu, triton 3.9.0, ..."."""
    if not fp:
        return "environment unknown"
    torch = f"torch {fp['torch']}"
    built = [f"CUDA {fp['cuda']}" if fp.get("cuda") else "", f"ROCm {fp['rocm']}" if fp.get("rocm") else "",
             f"driver {fp['driver']}" if fp.get("driver") else ""]
    if any(built):
        torch += f" ({', '.join(b for b in built if b)})"
    parts = [f"python {fp['python']}", torch, f"triton {fp['triton']}" if fp.get("triton") else "no triton",
             _device_text(fp.get("device")), f"kladder {fp['kladder']}"]
    git = fp.get("git")
    if git:
        parts.append(f"git {git['commit'][:10]}{' (uncommitted changes)' if git['dirty'] else ''}")
    env = fp.get("env") or {}
    shown = [f"{k}={v}" for k, v in list(env.items())[:ENV_SHOWN]]
    if len(env) > ENV_SHOWN:
        shown.append(f"+{len(env) - ENV_SHOWN} more (--json)")
    return ", ".join(parts) + ("; env " + " ".join(shown) if shown else "; no compile-steering env")


def _device_text(d: dict | None) -> str:
    if not d:
        return "device not queried"
    if d["kind"] == "cpu":
        return f"cpu ({d['name']})"
    more = f" x{d['count']}" if d.get("count", 1) > 1 else ""
    return f"{d['name']} ({d['arch']}, capability {d['capability']}){more}"


def target_warning_text(w: dict) -> str:
    return (f"{w['var']}={w['value']} names a build target that the live device ({w['name']}, {w['device']}) is not: "
            "code dispatched by the build target, not by the device, runs a kernel built or chosen for another GPU")


def nothing_ran_text(n_points: int) -> str:
    if n_points == 0:
        return "nothing ran: the rungs climbed generated no point for this spec, so nothing was tested"
    return (f"nothing ran: all {n_points} points were skipped (each with its reason above), so nothing was tested; "
            "the climb exits 5, not 0")


# ---------------------------------------------------------------------------- a climb that could not start
def device_start_text(x: dict) -> str:
    """report.start_error's line when the device refused (devicestart.DeviceStartError's facts)."""
    gpu = f" on GPU {x['gpu']}" if x.get("gpu") not in (None, "") else ""
    head = f"{x['what']}{gpu} failed for {x['waited_s']:g} s: {x['error'] or 'no error text'}"
    return f"{head}; {device_holders_text(x)}; wait for them to finish, or give --devices a free GPU"


def device_holders_text(x: dict) -> str:
    if x.get("free_bytes") is None:
        mem = "the device's free memory is unknown (no nvidia-smi)"
    else:
        mem = f"the device had {human_bytes(x['free_bytes'])} free of {human_bytes(x['total_bytes'] or 0)}"
    holders = x.get("holders")
    if holders is None:
        return f"{mem}, held by processes unknown"
    if not holders:
        return f"{mem}, no process listed as holding it"
    shown = ", ".join(f"pid {h['pid']} {h['name']}" + (f" ({human_bytes(h['used_bytes'])})" if h.get("used_bytes")
                                                       is not None else "") for h in holders[:6])
    more = f" and {len(holders) - 6} more" if len(holders) > 6 else ""
    return f"{mem}, held by {len(holders)} process{'es' if len(holders) != 1 else ''}: {shown}{more}"


def collection_failed_text(errors: int, selected: int) -> str:
    """The pytest plugin: collection failed, so no kladder point ran (not 'all were skipped')."""
    which = f"{errors} error{'s' if errors != 1 else ''}, shown above" if errors else "a usage error: pytest's ERROR line"
    return (f"no point ran: pytest's collection failed ({which}), so nothing was tested "
            f"({selected} kladder point{'s' if selected != 1 else ''} had been collected)")
