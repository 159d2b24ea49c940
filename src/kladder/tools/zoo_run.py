"""`kladder zoo climb` with no case (or several): every case (those named), the buggy kernel and
its twin, as a table; each case at its own rung unless --rungs says otherwise.

On the CPU two climbs run side by side (--cases-at-once): a climb's lanes wait on worker
starts, on fresh processes (rung 4, rung 7) and on points re-run alone, and the other climb
uses the core meanwhile. Each climb keeps its own workers, pool and verdicts; the table is
printed in the cases' order whatever order the climbs end in.

On the CPU every climb's processes (its workers, its modes' own processes) are forked from one
warm fork server that the whole run shares (run/forkserver.py), not started afresh, nor from a
server of each climb's own: a start imports torch and Triton, ~2.4 CPU seconds, and the zoo's
86 climbs started two workers each (measured: docs/results/2026-12-06-cpu-zoo-speed).

Without --rungs, a case that needs CUDA on a device that is not CUDA is not climbed with its
buggy kernel: its bug cannot show there (a 4 GiB point, a race, two GPUs), so the row says it
needs a GPU without climbing it; its twin is climbed (no false alarm on the points the CPU
runs). --rungs climbs every kernel of every case, as asked."""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ..core.zoo_rows import CaseRow, judge_case, tally


def default_at_once(device: str) -> int:
    """Two climbs at a time on the CPU; one on CUDA, where a climb already fills the GPU with
    its lanes and a big point must run alone."""
    return 2 if device == "cpu" else 1


def climb_all(args) -> int:
    from .cases import case_modules
    from ..report.zoo import env_text, interrupted_text, row_text, summary_text
    from ..climbing.session import device_of
    device = device_of(args.device)
    at_once = getattr(args, "cases_at_once", None) or default_at_once(device)
    chosen = getattr(args, "case", None) or []           # `kladder zoo climb A B`: those cases, in the zoo's order
    cases = {name: mod.CASE for name, mod in case_modules().items() if not chosen or name in chosen}
    climbs = _Climbs(args, device, at_once, _shared_server(device))
    rows: list[CaseRow] = []
    name = next(iter(cases), "")
    try:
        for name, case in cases.items():
            climbs.submit(name, case)
        for name, case in cases.items():
            done = climbs.results(name)
            if done is None or any(r.interrupted for r, _ in done):
                sys.stdout.write(interrupted_text(name) + summary_text(tally(rows), device))
                return 130
            (bug, t_bug), (twin, t_twin) = done
            rows.append(judge_case(name, case, bug, twin, device, t_bug + t_twin,
                                   bug_climbed=not not_climbed(name, case, device, args)))
            _print_case(args, name, case, rows[-1])
            sys.stdout.write(row_text(rows[-1]) + "\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        climbs.stop()
        sys.stdout.write(interrupted_text(name) + summary_text(tally(rows), device))
        return 130
    except BaseException:
        climbs.stop()                  # kladder's own error in one climb: the others end with it
        raise
    finally:
        climbs.close()
    sys.stdout.write(summary_text(tally(rows), device) + env_text(rows))
    if getattr(args, "json", None):
        from ..report.jsonout import write_zoo
        write_zoo(args.json, rows, device)
    return 0 if tally(rows).ok else 1


def _print_case(args, name, case, row: CaseRow) -> None:
    from ..report.terminal import render_case_text, render_text
    from ..report.zoo import case_title
    if args.verbose:                 # each ladder whole
        sys.stdout.write(render_text(row.bug, verbose=True) + render_text(row.twin, verbose=True))
    else:
        sys.stdout.write(render_case_text(case_title(name, case), row.bug, row.twin, _color(args.color)))


def _shared_server(device: str):
    """The fork server every climb's pool forks from (None where there is none: not POSIX,
    KLADDER_FORKSERVER=0, or it could not start; each climb then starts its own processes; or
    where KLADDER_FORKSERVER names a server's socket already, which every pool forks from)."""
    import os
    choice = os.environ.get("KLADDER_FORKSERVER", "")
    if os.name != "posix" or choice == "0" or choice.startswith("/") or device != "cpu":
        return None                     # on CUDA one climb runs at a time, each with its own (as measured there)
    from ..run.forkclient import Server
    from ..run.workers import worker_env
    try:
        return Server(worker_env(device), label="kladder zoo")
    except OSError:
        return None


def not_climbed(name: str, case: dict, device: str, args) -> bool:
    """The buggy kernel of a case that needs CUDA, off CUDA, at the default rungs: its bug
    cannot show here, so it is not climbed (module docstring)."""
    return not args.rungs and "cuda" in case["needs"] and device != "cuda"


def _unclimbed(name: str, case: dict, device: str):
    """The report of a buggy kernel not climbed here: every rung planned, none climbed, its own
    rung saying why."""
    from .cases import case_ref
    from ..core.fingerprint import fingerprint, source_file
    from ..climbing.ladder import plan_rungs
    from ..gen.load import load_spec
    from ..core.results import ClimbReport
    report = ClimbReport(load_spec(case_ref(name)).name, case_ref(name), device)
    # where it would have run, as a climb off a worker says it (ladder.Runner.fingerprint): the
    # report is a whole one (docs/report.schema.json)
    report.fingerprint = fingerprint(source_file(case_ref(name)), "cpu" if device == "cpu" else None)
    plan_rungs(report, ())
    for rr in report.rungs:
        if rr.rung == case["rung"]:
            rr.note = f"not climbed on {device}: the bug needs {case['needs']}"
    return report


class _Climbs:
    """The climbs of every case, `at_once` at a time in the cases' order (the buggy kernel
    first, then its twin). With one at a time each climb runs in this thread when its result
    is asked for, as a plain loop would (a Ctrl-C reaches the climb itself), and a case's twin
    is not climbed when its buggy kernel's climb was interrupted."""

    def __init__(self, args, device: str, at_once: int, server=None):
        self.args, self.device, self.at_once = args, device, max(1, at_once)
        self.server = server
        self._ex = ThreadPoolExecutor(self.at_once, thread_name_prefix="kladder-case") if self.at_once > 1 else None
        self._futures: dict[str, list] = {}
        self._pools: set = set()
        self._lock = threading.Lock()
        self._stopped = False

    def submit(self, name: str, case: dict) -> None:
        if self._ex is not None:
            self._futures[name] = [self._ex.submit(self._climb, name, case, fixed) for fixed in (False, True)]

    def results(self, name: str):
        """[(buggy report, seconds), (twin report, seconds)], or None once stopped."""
        from .cases import case_modules
        if self._ex is None:
            case = case_modules()[name].CASE
            bug = self._climb(name, case, False)
            return [bug] if bug[0].interrupted else [bug, self._climb(name, case, True)]
        done = [f.result() for f in self._futures[name]]
        return None if self._stopped else done

    def _climb(self, name: str, case: dict, fixed: bool):
        from .cases import case_ref
        from ..climbing.ladder import climb
        from ..climbing.session import parse_rungs
        from ..gen.load import load_spec
        from ..climbing.session import climb_options
        t0 = time.perf_counter()
        if not fixed and not_climbed(name, case, self.device, self.args):
            return _unclimbed(name, case, self.device), 0.0
        ref = case_ref(name, fixed)
        opts = climb_options(self.args, ref, self.device, server=self.server)
        # without --rungs, each case at its own rung: is it caught there, is its twin clean
        # there (every rung of every case: --rungs 1-4,6,8)
        opts.rungs = parse_rungs(self.args.rungs) if self.args.rungs else (case["rung"],)
        if self._ex is not None:
            opts.progress = None                  # two live displays side by side would garble each other
        with self._lock:
            if self._stopped:
                opts.pool.close()
                raise KeyboardInterrupt
            self._pools.add(opts.pool)
        from ..history.record import recorded
        spec = load_spec(ref)
        report, recorder = recorded(self.args, spec.name, ref, self.device, opts)   # --history / --no-history
        try:
            report = climb(ref, spec, opts, report=report)
        finally:
            opts.pool.close()
            with self._lock:
                self._pools.discard(opts.pool)
        recorder.end(report)
        return report, time.perf_counter() - t0

    def stop(self) -> None:
        """Ctrl-C in this thread: no climb starts any more, the running ones lose their workers."""
        with self._lock:
            self._stopped = True
            pools = list(self._pools)
        for pool in pools:
            pool.kill()

    def close(self) -> None:
        if self._ex is not None:
            self._ex.shutdown(wait=True, cancel_futures=True)
        if self.server is not None:
            self.server.close()


def _color(choice: str) -> bool:
    return choice == "always" or (choice == "auto" and sys.stdout.isatty())
