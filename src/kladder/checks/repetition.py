"""Rung 5's verdict on many calls of one point (run/modes/repeat.py measured them): which calls
differ from the first call on the same inputs, which are wrong, at what rate, and what a clean
run proves.

- A call is wrong when some element is further from the first call's than twice the tolerance
  (the first call was judged within the tolerance of the reference, so such an element is
  beyond it too), or when it is the worst call and fails against the reference itself.
- Spec(deterministic=True): any bit that differs fails, with the rate of differing calls.
- Otherwise wrong calls fail, with their rate; calls that differ only within the tolerance are
  a warning (nondeterminism), with their rate.
- Either way a rate comes with its Clopper-Pearson interval, the calls needed to see it with
  50% and 95% chance and the curve 1 - (1 - p)^N; a clean run says the bound it proves."""
from __future__ import annotations

from ..core.outcome import Check, Finding, Note, NoteKind
from ..core.facts import CHECK_FACTS
from ..core.sizes import dtype_of, shape_of
from ..core.stats import summary
from . import bitwise, values
from .pattern import describe, where_of

FIRST_CALLS = 8       # the numbers of the first calls that differ, kept as facts


def judge(spec, point, r, expected: dict | None, peers=None) -> tuple[list[Finding], list[Finding], Note | None]:
    """(findings, warnings, note) for a rung-5 repetition. `peers(names)` gives the honest peers
    of the worst call's inputs (harness.Peer by name), asked only for an output that fails the
    dtype's default where a peer may excuse it, as every call of rungs 1-4 is judged."""
    import torch
    if not r.bits:
        return [], [], None                      # no output could be compared: the first call's contract says why
    compared = r.calls - r.firsts
    differ = torch.stack([b > 0 for b in r.bits.values()]).any(0)
    wrong = torch.stack([f > 0 for f in r.far.values()]).any(0)
    against, worst_right = _worst_against_reference(spec, point, r, expected, peers)
    if against is not None and r.worst_call > r.firsts:
        wrong[r.worst_call - r.firsts - 1] = True
    elif worst_right and not spec.repetition.deterministic:
        # the worst call (the most elements past twice the default from its first call) is right
        # against the reference with its honest peer's budget: the first call passed within that
        # budget, not the default, so "past twice the default from it" is no evidence of a wrong
        # call (float atomics summed in another order each call: a weight gradient over 1,024 rows)
        wrong = torch.zeros_like(wrong)
    facts = _facts(spec, r, compared, differ, wrong)
    if spec.repetition.deterministic and facts["differ"]:
        return [_finding(spec, point, r, Check.REPEATS, facts, differ, against, bitwise_only=True)], [], None
    if facts["wrong"]:
        return [_finding(spec, point, r, Check.REPEATS, facts, wrong, against)], [], None
    note = Note.of(NoteKind.REPEATS_CLEAN, **facts, **_rate(0, compared))
    if facts["differ"]:
        return [], [_finding(spec, point, r, Check.NONDETERMINISTIC, facts, differ, None, bitwise_only=True)], note
    return [], [], note


def _facts(spec, r, compared: int, differ, wrong) -> dict:
    return {"calls": r.calls, "compared": compared, "firsts": r.firsts, "differ": int(differ.sum()),
            "wrong": int(wrong.sum()), "deterministic": spec.repetition.deterministic, "launch": r.launch, "inputs": r.inputs,
            "load": r.load, "seconds": round(r.seconds, 3), "stopped": r.stopped, "fallback": r.fallback,
            "post_graph": r.post_graph.format(),
            "calls_s": round(r.looped / r.seconds, 1) if r.seconds > 0 else 0.0}


def _rate(k: int, n: int) -> dict:
    s = summary(k, n)
    return {"rate": s["rate"], "lo": s["lo"], "hi": s["hi"], "conf": s["conf"], "bound": s["bound"],
            "calls_50": s["calls_50"], "calls_95": s["calls_95"], "curve": s["curve"]}


def _worst_against_reference(spec, point, r, expected, peers=None) -> tuple[Finding | None, bool]:
    """The worst call's outputs against the reference of its inputs: where it is wrong (None
    when it is right, or when the first call on those inputs is wrong too: every call is then,
    and the first call's own finding says so), and whether it was judged right."""
    if r.worst is None or expected is None:
        return None, False
    found = _against(spec, point, r.worst, expected, peers)
    if found is None:
        return None, True
    return (found if _against(spec, point, r.worst_first, expected, peers) is None else None), False


def _against(spec, point, outputs: dict, expected: values.Expected, peers=None) -> Finding | None:
    refs, refs_lo = expected.refs, expected.refs_lo
    for name, out in outputs.items():
        dtype = dtype_of(spec, name, point.dtype_of)
        about = {"dtype": dtype, "shape": list(shape_of(spec, name, point.sizes)), "mode": point.mode}
        tol, where = spec.tolerance_for(dtype, point.config, name), where_of(spec, name)
        bad_shape = values.shape_finding(name, out, refs[name])
        if bad_shape is not None:
            return bad_shape
        m = values.mismatch(out, refs[name], tol, None, refs_lo.get(name))
        if m is not None and m.n_excusable and peers is not None:
            m = values.settle_with(m, out, refs[name], tol, peers([name]).get(name))
        if m is not None:
            return values.finding(name, m, out, refs[name], tol, where, about)
    return None


def _finding(spec, point, r, check: Check, facts: dict, calls, against: Finding | None,
             bitwise_only: bool = False) -> Finding:
    """The rate of the calls in `calls` (a bool per compared call), and where the worst is off:
    against the reference when it is wrong there, else where its bits differ from the first."""
    k = int(calls.sum())
    numbers = (calls.nonzero().flatten()[:FIRST_CALLS] + r.firsts + 1).tolist()
    facts = {**facts, **_rate(k, facts["compared"]), "first_calls": numbers, "worst_call": r.worst_call,
             "bitwise": bitwise_only}
    label = f"call {r.worst_call:,} of {r.calls:,}" if r.worst_call else ""
    if against is not None and not bitwise_only:
        return Finding(check, against.output, call=label, pattern=against.pattern, mismatched=against.mismatched,
                       total=against.total, largest=against.largest, max_abs_err=against.max_abs_err,
                       facts=CHECK_FACTS[str(check)](**facts, nonfinite=getattr(against.facts, "nonfinite", None) or 0, against="reference"))
    name, differ = _bits_of_worst(spec, r)
    if name is None:
        return Finding(check, next(iter(r.bits)), call=label, facts=CHECK_FACTS[str(check)](**facts, against="first call"))
    worst, first = r.worst[name], r.worst_first[name]
    largest = float((worst.double() - first.double()).abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max())
    return Finding(check, name, call=label, pattern=describe(differ, where_of(spec, name)),
                   mismatched=int(differ.sum()), total=differ.numel(), max_abs_err=largest,
                   facts=CHECK_FACTS[str(check)](**facts, against="first call"))


def _bits_of_worst(spec, r):
    """The first output whose bits differ between the worst call and the first on its inputs."""
    if r.worst is None or r.worst_first is None:
        return None, None
    for name, out in r.worst.items():
        differ = bitwise.bits_differ(out, r.worst_first[name])
        if bool(differ.any()):
            return name, differ
    return None, None


# ---------------------------------------------------------------------------- rung 5's stream
PEER_CALLS = 1000     # calls over the dtype's default a stream re-judges with the honest peer, at most;
PEER_SHARE = 0.25     # and while the peers took less than this share of the stream's time budget; the rest are undecided


class StreamTally:
    """Rung 5's stream (run/modes/calls.py), batch by batch: every call against the reference of
    its own inputs, at the tolerance of its config (Spec.tolerance_for; kl.Calls(configs=) binds one a letter). A call is wrong
    when an output fails there and, where a peer may excuse it (finite against finite), fails the
    honest peer too (asked while the peers' time stays within PEER_SHARE of the stream's budget, for
    at most PEER_CALLS calls; later ones are undecided, as are bfloat16 calls that only the
    interpreter's truncation puts over). The first wrong call's outputs are located as any values
    failure is."""

    def __init__(self, spec, point):
        self.spec, self.point = spec, point
        self.judged = self.undecided = self.peered = self.excused = self.truncated = 0
        self.peer_s = 0.0
        self.wrong: list[int] = []              # wrong calls' numbers, in order (all of them: a stream is thousands)
        self.first: Finding | None = None       # the first wrong call against its reference
        self.first_where: tuple = (0, "")

    def batch(self, b, peers, rounding: dict | None = None) -> None:
        """One StreamBatch; `peers(j, names)` gives the honest peers of call j's outputs."""
        import time

        import torch
        n = len(b.sets)
        wrong = torch.zeros(n, dtype=torch.bool)
        doubt: dict[int, list] = {}
        for name, out in b.outputs.items():
            ref = b.refs[name]
            if tuple(ref.shape) != tuple(out.shape):
                continue                         # the first call's contract finding says why
            o2, r2 = _per_call_rows(out, n), _per_call_rows(ref, n)
            for config, calls in self._by_config(b, n).items():   # kl.Calls(configs=): each letter at its config's tolerance
                tol = self.spec.tolerance_for(dtype_of(self.spec, name, self.point.dtype_of), config, name)
                o, r = (o2, r2) if calls is None else (_calls_rows(o2, n, calls), _calls_rows(r2, n, calls))
                m = values.mismatch(o, r.to(o.device), tol, None)
                if m is None:
                    continue
                k = n if calls is None else len(calls)        # each call's rows, one row of these masks a call
                bad = m.bad.reshape(k, -1).cpu()
                hard = (m.bad & ~(o.isfinite() & r.to(o.device).isfinite())).reshape(k, -1).any(1).cpu()
                at = torch.arange(n) if calls is None else calls.cpu()
                wrong[at[hard]] = True
                for j in at[bad.any(1) & ~hard].tolist():
                    doubt.setdefault(j, []).append(name)
        for j, names in sorted(doubt.items()):
            if wrong[j]:
                continue
            t0 = time.perf_counter()
            verdict = self._settled(b, j, names, peers, rounding)
            self.peer_s += time.perf_counter() - t0
            if verdict == "truncated":
                self.truncated += 1
            elif verdict is None:
                self.undecided += 1
            elif verdict:
                wrong[j] = True
            else:
                self.excused += 1
        self.judged += n
        calls = (wrong.nonzero().flatten() + b.first_call).tolist()
        self.wrong += calls
        if self.first is None and calls:
            j = calls[0] - b.first_call
            self.first = self._located(b, j, peers)
            self.first_where = b.where[j]

    def _by_config(self, b, n: int) -> dict:
        """The batch's calls by the config they passed: {config: None} (every call, the point's) where
        they are one config; else {config: the calls' indices} (kl.Calls(configs=) binds letters to configs)."""
        import torch
        configs = [getattr(getattr(p, "point", None), "config", self.point.config) for p in (b.preps or [])] or [self.point.config]
        if len(set(configs)) == 1:
            return {configs[0]: None}
        out: dict = {}
        for j, c in enumerate(configs[:n]):
            out.setdefault(c, []).append(j)
        return {c: torch.tensor(js) for c, js in out.items()}

    def _config_of(self, b, j: int) -> tuple:
        return getattr(getattr(b.preps[j], "point", None), "config", self.point.config) if b.preps else self.point.config

    def _settled(self, b, j: int, names: list, peers, rounding) -> bool | str | None:
        """Call j's outputs that failed the default with a peer that may excuse them: True
        (wrong), False (excused), None (not decided: past the peers' budget), "truncated" (not
        judged: a bfloat16 miss the interpreter's truncation explains)."""
        import torch
        if self.peered >= PEER_CALLS or self.peer_s > PEER_SHARE * b.budget_s:
            return None
        self.peered += 1
        got = peers(j, names)
        for name in names:
            out, ref = b.outputs[name][j], b.refs[name][j]
            tol = self.spec.tolerance_for(dtype_of(self.spec, name, self.point.dtype_of), self._config_of(b, j), name)
            m = values.mismatch(out, ref.to(out.device), tol, None)
            m = None if m is None else values.settle_with(m, out, ref.to(out.device), tol, got.get(name))
            if m is None:
                continue
            if (rounding is not None and out.dtype == torch.bfloat16
                    and values.settle(m, out, ref.to(out.device), tol, slack_ulps=1) is None):
                return "truncated"
            return True
        return False

    def _located(self, b, j: int, peers) -> Finding | None:
        """Call j (the first wrong one) against its reference: which output, where, how far."""
        for name, out in b.outputs.items():
            o, ref = out[j], b.refs[name][j].to(out.device)
            if tuple(o.shape) != tuple(ref.shape):
                continue
            dtype = dtype_of(self.spec, name, self.point.dtype_of)
            tol = self.spec.tolerance_for(dtype, self._config_of(b, j), name)
            about = {"dtype": dtype, "shape": list(shape_of(self.spec, name, self.point.sizes)), "mode": self.point.mode}
            m = values.mismatch(o, ref, tol, None)
            if m is not None:
                return values.finding(name, m, o, ref, tol, where_of(self.spec, name), about)
        return None

    def result(self, s) -> tuple[list[Finding], list[Finding], Note | None]:
        """(findings, warnings, note) once the stream ended (`s`: run/modes/base.Streamed)."""
        k = len(self.wrong)
        facts = {"calls": s.calls, "judged": self.judged, "wrong": k, "sets": s.sets, "pattern": s.pattern,
                 "fresh": s.fresh, "count": s.count, "declared": s.declared, "seconds": round(s.seconds, 3),
                 "stopped": s.stopped, "batched": s.batched, "undecided": self.undecided, "peered": self.peered,
                 "excused": self.excused, "truncated": self.truncated,
                 "calls_s": round(s.calls / s.seconds, 1) if s.seconds > 0 else 0.0, **_rate(k, self.judged)}
        if not k:
            return [], [], Note.of(NoteKind.STREAM_CLEAN, **facts)
        step, letter = self.first_where
        more = {"first_wrong": self.wrong[0], "first_calls": self.wrong[:FIRST_CALLS], "step": step, "letter": letter}
        label = f"call {self.wrong[0]:,} of {s.calls:,}"
        f = self.first
        if f is None:
            return [Finding(Check.STREAM, next(iter(self.spec.outputs)), call=label,
                            facts=CHECK_FACTS["stream"](**facts, **more))], [], None
        return [Finding(Check.STREAM, f.output, call=label, pattern=f.pattern, mismatched=f.mismatched, total=f.total,
                        largest=f.largest, max_abs_err=f.max_abs_err,
                        facts=CHECK_FACTS["stream"](**facts, **more, nonfinite=getattr(f.facts, "nonfinite", None) or 0))], [], None


def _calls_rows(rows, n: int, calls):
    """The rows of these calls (indices) out of _per_call_rows' n calls' rows."""
    return rows.reshape(n, -1, rows.shape[-1])[calls.to(rows.device)].reshape(-1, rows.shape[-1])


def _per_call_rows(t, n: int):
    """[calls, ...] -> the rows each call's own comparison has (as_rows of one call's output),
    stacked: each row's scale stays its own call's."""
    from ..core.sizes import as_rows
    one = as_rows(t[0])
    return t.reshape(n * one.shape[0], one.shape[1])
