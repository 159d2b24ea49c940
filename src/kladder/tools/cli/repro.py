"""`kladder repro`: one point again, through the climb's Runner, or once in this process (--pdb, --save)."""
from __future__ import annotations

import datetime
import os
import sys

from ...core.errors import UsageError, UsageProblem
from ...climbing.session import device_of
from ...version import __version__
from .common import EXIT_FAILED, EXIT_OK, checked_ref, device_word, load


def cmd_repro(args) -> int:
    # what needs no torch, no worker and no spec first: the device's word, the file, the point's text
    device_word(args.device)
    checked_ref(args.ref)
    point = _parsed_point(args.point)
    if args.save:
        _checked_dir("--save", args.save)
    if args.pdb or args.save:
        return _debug_repro(args, point)
    return _repro(args, point)


def _cpu_first(device: str) -> None:
    """On the CPU, this process as a worker's: Triton interpreted, no CUDA device (run/workers.worker_env),
    set before torch and the spec are imported."""
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


def _repro_spec(args, point, here: bool = False):
    """The device, the spec and the point checked against it (and shifted, sanitized as asked).
    This process set up as a worker is (torch's settings) where it runs the point itself (`here`:
    --pdb, --save) or forks the CPU's workers from itself."""
    _cpu_first(args.device)
    device = device_of(args.device)
    _cpu_first(device)
    spec = load(args.ref, device)
    if point.spec != spec.name:
        raise UsageProblem(f"POINT belongs to spec {point.spec!r}, not {spec.name!r}; check PATH::NAME.")
    from ...climbing.pointcheck import PointError, check_point
    try:
        check_point(spec, point)
    except PointError as e:
        raise UsageProblem(str(e)) from None
    if device == "cpu" or here:              # this process runs the point (--pdb, --save) or forks its workers
        from ...run.worker import setup_torch
        setup_torch(device)
    if args.sanitize:
        from ...gen.gaps.repetition import sanitized
        point = sanitized(point, args.sanitize)
    return device, spec, point.shifted(args.seed)


def _repro(args, point) -> int:
    """The point through the climb's Runner (replayed, re-run alone, judged as the climb judged it).
    On the CPU its workers are forks of this process, which imported torch and the spec once
    (run/forked.py): a small point's repro costs little more than torch's import."""
    from ...climbing.ladder import Runner
    from ...report.terminal import render_outcome
    device, spec, point = _repro_spec(args, point)
    pool = None
    if device == "cpu":
        from ...run.forked import ForkPool
        pool = ForkPool(args.ref, spec, device, {"device_name": "cpu"})
    runner = Runner(args.ref, spec, device, args.timeout, pool=pool)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        outcome = runner.run(point)          # as the climb ran it: replayed, and alone when it fails
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    finally:
        fp = runner.fingerprint
        runner.close()
    _record_repro(args, spec, device, started, outcome, fp)
    sys.stdout.write(render_outcome(outcome, fingerprint=fp, verbose=args.verbose))
    return EXIT_OK if outcome.status == "passed" else EXIT_FAILED


def _debug_repro(args, point) -> int:
    """--pdb / --save: the point run once in this process (no worker, no replay, no timeout), a
    debugger at its failure and its tensors written as asked (run/debug.py)."""
    import bdb

    from ...climbing.ladder import repro_command
    from ...report.terminal import render_outcome
    from ..debug import debug_run
    device, spec, point = _repro_spec(args, point, here=True)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        outcome, fp = debug_run(spec, point, device, args.ref, pdb=args.pdb, save=args.save)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    except bdb.BdbQuit:
        print("kladder: quit in the debugger: the point's run ended there, no verdict", file=sys.stderr)
        return EXIT_FAILED
    outcome.repro = repro_command(args.ref, device, point)
    _record_repro(args, spec, device, started, outcome, fp)
    sys.stdout.write(render_outcome(outcome, fingerprint=fp, verbose=args.verbose))
    sys.stdout.write(f"(run once in this process for {'--pdb' if args.pdb else '--save'}: no replay, no run alone, "
                     "no timeout; without it the repro judges as the climb does)\n")
    if args.save:
        sys.stdout.write(f"saved: {args.save} (README.md says what each file holds)\n")
    return EXIT_OK if outcome.status == "passed" else EXIT_FAILED


def _checked_dir(option: str, path: str) -> None:
    """An output folder: made if missing, refused if it is a file or cannot be written."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageProblem(f"{option} {path!r}: a file is there; give a folder (made if missing).")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageProblem(f"{option} {path!r}: cannot make the folder ({e.strerror}); give a folder you can write.") from None
    if not os.access(path, os.W_OK):
        raise UsageProblem(f"{option} {path!r}: the folder is not writable; give a folder you can write.")


def _parsed_point(text: str):
    from ...core.point import Point
    try:
        return Point.parse(text)
    except ValueError as e:
        raise UsageProblem(f"POINT: {e}") from None


def _record_repro(args, spec, device, started, outcome, fp) -> None:
    """A repro in the history too: a climb of kind 'repro' with its one point."""
    from ...history.record import Recorder
    from ...core.results import ClimbReport, RungReport
    rec = Recorder.from_args(args)
    report = ClimbReport(spec.name, args.ref, device, started=started, kladder_version=__version__, fingerprint=fp)
    report.rungs.append(RungReport(outcome.point.rung, "", [outcome]))
    rec.begin(report, kind="repro")
    rec.point(outcome)
    rec.end(report)
