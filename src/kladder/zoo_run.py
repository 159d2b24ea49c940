"""`kladder zoo climb` with no case: every case, the buggy kernel and its twin, as a table;
each case at its own rung unless --rungs says otherwise."""
from __future__ import annotations

import sys
import time


def climb_all(args) -> int:
    from .cases import case_modules, case_ref
    from .session import climb_options, device_of
    from .ladder import climb, parse_rungs
    from .load import load_spec
    from .report.terminal import render_text
    device = device_of(args.device)
    rows, ok = [], True
    for name, mod in case_modules().items():
        case, t0 = mod.CASE, time.perf_counter()
        reports = {}
        for fixed in (False, True):
            ref = case_ref(name, fixed)
            # without --rungs, each case at its own rung: is it caught there, is its twin clean
            # there (every rung of every case: --rungs 1-4,6,8)
            opts = climb_options(args, ref, device)
            opts.rungs = parse_rungs(args.rungs) if args.rungs else (case["rung"],)
            try:
                reports[fixed] = climb(ref, load_spec(ref), opts)
            finally:
                opts.pool.close()
            if args.verbose:
                sys.stdout.write(render_text(reports[fixed]))
            if reports[fixed].interrupted:
                break
        if any(r.interrupted for r in reports.values()):
            sys.stdout.write(f"\ninterrupted during {name}: the table holds the cases climbed before it\n")
            sys.stdout.write(_summary(rows, device))
            return 130
        bug, twin = reports[False], reports[True]
        needs_gpu = "cuda" in case["needs"] and device != "cuda"
        caught = bug.lowest_failing_rung is not None
        # a GPU case's twin may run nothing on the CPU (every point skipped): no false alarm there
        clean = twin.exit_code == 0 or (needs_gpu and twin.nothing_ran)
        verdict = ("caught" if caught else "needs a GPU (skipped, or a race the CPU cannot run)" if needs_gpu
                   else "MISSED")
        ok &= clean and (caught or needs_gpu)
        rows.append((name, case["rung"], bug, twin, verdict, clean, time.perf_counter() - t0))
        if not args.verbose:
            sys.stdout.write(render_case(name, case, bug, twin, color=_color(args.color)))
        sys.stdout.write(_row_text(rows[-1]) + "\n")
        sys.stdout.flush()
    sys.stdout.write(_summary(rows, device))
    if rows:
        from .report.words import fingerprint_text
        sys.stdout.write(f"env: {fingerprint_text(rows[0][2].fingerprint)}\n")
    return 0 if ok else 1


def _color(choice: str) -> bool:
    return choice == "always" or (choice == "auto" and sys.stdout.isatty())


def render_case(name, case, bug, twin, color=False) -> str:
    """One case: the buggy kernel's ladder, its first failure, and the twin's verdict."""
    from .report.terminal import render_case_text
    return render_case_text(f"{name} (rung {case['rung']}, {case['gap']}; mirrors {case['mirrors']})", bug, twin, color)


def _row_text(row) -> str:
    name, rung, bug, twin, verdict, clean, secs = row
    low = bug.lowest_failing_rung
    nfail = len(bug.failures)
    bug_text = f"{nfail} failed point{'s' if nfail != 1 else ''}, lowest failing rung {low}" if low else "no failure"
    twin_text = "twin clean" if clean else f"twin FALSE ALARM ({len(twin.failures)} failed)"
    return f"{name:24} rung {rung}  buggy: {verdict:8} ({bug_text}); {twin_text}  [{secs:.1f} s]"


def _summary(rows, device: str) -> str:
    caught = sum(r[4] == "caught" for r in rows)
    gpu = sum(r[4].startswith("needs a GPU") for r in rows)
    clean = sum(r[5] for r in rows)
    return (f"\nzoo on {device}: {caught}/{len(rows)} buggy kernels caught"
            + (f" ({gpu} need a GPU)" if gpu else "") + f"; {clean}/{len(rows)} fixed twins clean\n")
