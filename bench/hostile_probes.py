"""Issue 36's probe families, run again as a hostile user and a failing machine would: every
probe is a real `kladder` process, judged from outside.

- point:   `kladder repro` with points that set PYTHONPATH, LD_PRELOAD (a real .so whose
           constructor writes a marker, where gcc is here), PYTHONSTARTUP, a declared variable
           with an undeclared value, and with fields out of the spec (rung, mode, seed, layouts,
           config, a 50,000-deep and a 100 KB string, a call in a dict literal): code run = a marker
           written by the point's code.
- lost:    a full disk (a real 64 KiB tmpfs where this runs as root, else os.write failing with
           ENOSPC through a sitecustomize on the probe's own PYTHONPATH) under --json, under
           --html, under a log that fills mid-climb or is full at the start, --log /dev/full, a
           damaged golden row under --golden and --golden=strict: lost = the verdict not printed,
           an output on a disk with room not written, the history not finished, a report that
           calls a rung passed with points missing, a 0-byte log, a torn line.
- signals: SIGINT and SIGTERM, to the process alone and to its group, at moments of a small climb
           (half spread over its start, half after its log, a point, two, its end record) while a
           CPU-bound process per core loads the machine: lost = no report once the climb started,
           a partial or temporary file, a signal swallowed, a torn log.
- stored:  history, diff and golden on a history with garbage inside its pages and in
           climbs.fingerprint; report on JSON with rungs "x", points as strings, a fingerprint
           list, 100,000 levels deep.
- procs:   a kernel that forks a child and a daemon (setsid): climbed to its end, SIGINTed mid-
           climb, SIGKILLed mid-climb: a process of the kernel's alive after the climb ends.

Every probe counts a traceback (a Python traceback on stderr where kladder's own handler was in
place), a lost report and code run from a point string; the summary must read 0, 0, 0.

usage: python bench/hostile_probes.py [--src SRC] [--families point,lost,...] [--moments 10]
                                      [--json PATH] [--markdown PATH]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
SPECS = os.path.join(ROOT, "tests", "specs")
TRIVIAL, SLOW, CONDITIONS = (os.path.join(SPECS, f) for f in ("trivial.py", "slow.py", "conditions.py"))
FAMILIES = ("point", "lost", "signals", "stored", "procs")

SITE = pathlib.Path(ROOT, "tests", "data", "full_disk", "sitecustomize.py").read_text()

TAIL = pathlib.Path(SPECS, "tail3.py").read_text()

FORKING = '''
import os
import time

import kladder as kl

PIDS = os.environ["KLT_PIDS"]


def _sleeper(daemon):
    if daemon:
        os.setsid()
        if os.fork():
            os._exit(0)
    with open(PIDS, "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(600)
    os._exit(0)


def kernel(x):
    for daemon in (False, True):
        if os.fork() == 0:
            _sleeper(daemon)
    time.sleep(0.3)
    return 2 * x


spec = kl.Spec("forking", kernel=kernel, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
'''


class Probes:
    def __init__(self, src: str, work: str):
        self.src, self.work = src, work
        self.rows: list[dict] = []
        site = os.path.join(work, "site")
        os.makedirs(site, exist_ok=True)
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write(SITE)
        self.site = site
        self.tail = self._file("tail.py", TAIL)
        self.forking = self._file("forking.py", FORKING)

    def _file(self, name: str, text: str) -> str:
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def env(self, **extra) -> dict:
        return {**os.environ, "PYTHONPATH": os.pathsep.join([self.site, self.src]), **extra}

    def kladder(self, *args, cwd=None, timeout=600, **env) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kladder.tools.cli", *args], capture_output=True, text=True,
                              cwd=cwd or self.work, timeout=timeout, env=self.env(**env))

    def row(self, family: str, name: str, p, lost: bool = False, code_ran: bool = False, traceback=None, **facts):
        tb = ("Traceback (most recent call last)" in (p.stderr or "")) if traceback is None else traceback
        self.rows.append({"family": family, "probe": name, "exit": getattr(p, "returncode", None), "traceback": tb,
                          "lost": bool(lost), "code_ran": bool(code_ran), **facts})
        mark = "  " if not (tb or lost or code_ran) else "!!"
        print(f"{mark} {family:8} {name:60} exit {getattr(p, 'returncode', None)!s:5} traceback {int(tb)} lost "
              f"{int(bool(lost))} code {int(bool(code_ran))} {facts if facts else ''}", flush=True)


# ---------------------------------------------------------------------------------------------- point

def _evil(work: str) -> tuple[str, str, str | None]:
    """A PYTHONPATH folder whose sitecustomize writes a marker, and (with gcc) a .so whose
    constructor writes one."""
    evil = os.path.join(work, "evil")
    os.makedirs(evil, exist_ok=True)
    marker = os.path.join(work, "PWNED")
    with open(os.path.join(evil, "sitecustomize.py"), "w") as f:
        f.write(f"open({marker!r}, 'a').write('sitecustomize\\n')\n")
    so = None
    if shutil.which("gcc"):
        c = os.path.join(evil, "evil.c")
        with open(c, "w") as f:
            f.write('#include <stdio.h>\n__attribute__((constructor)) static void run(void) { FILE *f = fopen("'
                    + marker + '", "a"); if (f) { fputs("ld_preload\\n", f); fclose(f); } }\n')
        so = os.path.join(evil, "evil.so")
        if subprocess.run(["gcc", "-shared", "-fPIC", "-o", so, c], capture_output=True).returncode != 0:
            so = None
    return evil, marker, so


def family_point(pr: Probes) -> None:
    evil, marker, so = _evil(pr.work)
    base = {"spec": "double", "rung": 7, "dims": [["N", 2]], "mode": "dispatch"}
    envs = [("PYTHONPATH", evil), ("PYTHONSTARTUP", os.path.join(evil, "sitecustomize.py"))]
    envs += [("LD_PRELOAD", so)] if so else [("LD_PRELOAD", os.path.join(evil, "missing.so"))]
    cases = [(f"env {k}", TRIVIAL, {**base, "env": [[k, v]]}) for k, v in envs]
    cases += [("env declared var, undeclared value + PYTHONPATH", f"{CONDITIONS}::read_at_call",
               {"spec": "fast_at_call", "rung": 7, "dims": [["N", 129]], "mode": "dispatch",
                "env": [["KLT_FAST", "1"], ["PYTHONPATH", evil]]}),
              ("env declared var, value 'evil'", f"{CONDITIONS}::read_at_call",
               {"spec": "fast_at_call", "rung": 7, "dims": [["N", 129]], "mode": "dispatch", "env": [["KLT_FAST", "evil"]]})]
    fields = {"rung 9": ("rung", {"rung": 9}), "mode sanitize at rung 1": ("mode", {"rung": 1, "mode": "sanitize"}),
              "seed 2**80": ("seed", {"rung": 1, "seed": 1 << 80}), "seed -1": ("seed", {"rung": 1, "seed": -1}),
              "layout 'diagonal'": ("layouts", {"rung": 3, "layouts": [["x", "diagonal"]]}),
              "layout on no tensor": ("layouts", {"rung": 3, "layouts": [["os", "sliced"]]}),
              "config value a list": ("config", {"rung": 1, "config": [["BLOCK", [1, 2]]]}),
              "repeat tool 'sh'": ("repeat", {"rung": 5, "mode": "sanitize", "repeat": [["tool", "sh"]]}),
              "ranks lag past world": ("ranks", {"rung": 6, "mode": "collective",
                                                 "ranks": [["world", 2], ["lag", 9], ["lag_us", 0], ["sizes", [1]]]}),
              "variant $PYTHONPATH": ("variant", {"rung": 7, "mode": "flags", "variant": "$PYTHONPATH"})}
    cases = [(name, "env", ref, point) for name, ref, point in cases]
    cases += [(f"field {k}", field, TRIVIAL, {"spec": "double", "dims": [["N", 2]], **v}) for k, (field, v) in fields.items()]
    for name, field, ref, point in cases:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)
        p = pr.kladder("repro", ref, json.dumps(point), "--device", "cpu", "--no-history")
        pr.row("point", name, p, code_ran=os.path.exists(marker), refused=p.returncode == 2,
               names_the_field=f"POINT {field}" in p.stderr)
    texts = {"50,000-deep list": "[" * 50_000 + "]" * 50_000,
             "30,000-deep dims": '{"spec":"double","rung":1,"dims":' + "[" * 30_000 + "]" * 30_000 + "}",
             "100 KB string (one argument holds 128 KiB)": '{"spec":"' + "x" * 100_000 + '","rung":1,"dims":[["N",2]]}',
             "a call in a dict literal": "{'spec': __import__('os').system('touch " + marker + "'), 'rung': 1}"}
    for name, text in texts.items():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)
        p = pr.kladder("repro", TRIVIAL, text, "--device", "cpu", "--no-history")
        pr.row("point", name, p, code_ran=os.path.exists(marker), refused=p.returncode == 2)
    p = pr.kladder("repro", f"{CONDITIONS}::read_at_call", json.dumps(
        {"spec": "fast_at_call", "rung": 7, "dims": [["N", 129]], "mode": "dispatch", "env": [["KLT_FAST", "1"]]}),
        "--device", "cpu", "--no-history")
    pr.row("point", "control: a declared variable and value runs", p, lost=p.returncode not in (0, 1))


# ---------------------------------------------------------------------------------------------- lost

@contextlib.contextmanager
def full_folder(work: str, name: str):
    """(folder, env): a folder on a full disk. A real 64 KiB tmpfs filled to the last page where
    this runs as root and may mount; else a plain folder whose writes fail through the probe's
    sitecustomize (KLT_FULL)."""
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", folder],
                                                    capture_output=True).returncode == 0
    try:
        if mounted:
            fd = os.open(os.path.join(folder, "fill"), os.O_WRONLY | os.O_CREAT)
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * 4096):
                    pass
            os.close(fd)
            yield folder, {}, "tmpfs"
        else:
            yield folder, {"KLT_FULL": folder, "KLT_FULL_AFTER": "0"}, "ENOSPC via sitecustomize"
    finally:
        if mounted:
            subprocess.run(["umount", folder], capture_output=True)


def _history_row(path: str) -> tuple | None:
    try:
        db = sqlite3.connect(path)
        try:
            return db.execute("SELECT verdict, exit_code, ended IS NOT NULL FROM climbs ORDER BY id DESC").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None


def _rungs_honest(path: str, planned: int = 3) -> bool:
    """No rung called passed with fewer points than it has."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return False
    return all(not (r["verdict"] == "passed" and len(r["points"]) < planned) for r in doc["rungs"] if r["rung"] == 1)


def _whole_lines(path: str) -> bool:
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return True
    try:
        [json.loads(line) for line in text.splitlines()]
    except ValueError:
        return False
    return text.endswith("\n") or text == ""


def family_lost(pr: Probes) -> None:
    def climb(d: str, *args, **env):
        return pr.kladder("climb", pr.tail, "--device", "cpu", "--rungs", "1", "-j", "1", "--color", "never",
                          "--history", os.path.join(d, "h.sqlite"), *args, cwd=d, **env)

    for output in ("--json", "--html"):
        d = tempfile.mkdtemp(dir=pr.work, prefix="lost-")
        with full_folder(d, "full") as (full, env, how):
            other = "--html" if output == "--json" else "--json"
            p = climb(d, output, os.path.join(full, "r.out"), other, os.path.join(d, "r.other"), "--log",
                      os.path.join(d, "l.jsonl"), **env)
            leftovers = [f for f in os.listdir(full) if f not in ("fill",)]
        verdict = p.returncode == 1 and "FAILED" in p.stdout
        other_ok = os.path.getsize(os.path.join(d, "r.other")) > 0 if os.path.exists(os.path.join(d, "r.other")) else False
        hist = _history_row(os.path.join(d, "h.sqlite"))
        said = "could not write" in p.stderr
        pr.row("lost", f"{output} on a full disk ({how})", p,
               lost=not (verdict and other_ok and hist == ("failed", 1, 1) and said and not leftovers),
               verdict_printed=verdict, other_written=other_ok, history=hist, said=said, leftovers=leftovers)
    d = tempfile.mkdtemp(dir=pr.work, prefix="lost-")
    log = os.path.join(d, "l.jsonl")
    p = climb(d, "--json", os.path.join(d, "r.json"), "--log", log, KLT_FULL=log, KLT_FULL_AFTER="3000")
    pr.row("lost", "a log whose disk fills mid-climb (ENOSPC after 3000 bytes)", p,
           lost=not (_whole_lines(log) and _rungs_honest(os.path.join(d, "r.json")) and p.returncode == 1),
           whole_lines=_whole_lines(log), warnings=p.stderr.count("could not be written"))
    d = tempfile.mkdtemp(dir=pr.work, prefix="lost-")
    with full_folder(d, "full") as (full, env, how):
        log = os.path.join(full, "l.jsonl")
        p = climb(d, "--json", os.path.join(d, "r.json"), "--log", log, **env)
        zero = os.path.exists(log) and os.path.getsize(log) == 0
    pr.row("lost", f"a log on a full disk at the start ({how})", p,
           lost=zero or not _rungs_honest(os.path.join(d, "r.json")) or p.returncode != 1, zero_byte_log=zero)
    d = tempfile.mkdtemp(dir=pr.work, prefix="lost-")
    p = climb(d, "--json", os.path.join(d, "r.json"), "--log", "/dev/full")
    pr.row("lost", "--log /dev/full", p, lost=not _rungs_honest(os.path.join(d, "r.json")) or p.returncode != 1)
    for mode in ("--golden", "--golden=strict"):
        d = tempfile.mkdtemp(dir=pr.work, prefix="lost-")
        climb(d)
        pr.kladder("golden", "record", "tail", "--history", os.path.join(d, "h.sqlite"), cwd=d)
        db = sqlite3.connect(os.path.join(d, "h.sqlite"))
        db.execute("UPDATE golden SET hashes = '{not json' WHERE point_id = 'r1-N=2'")
        db.commit()
        db.close()
        p = climb(d, mode, "--json", os.path.join(d, "r.json"))
        named = "point 'r1-N=2'" in p.stderr
        pr.row("lost", f"a damaged golden row under {mode}", p,
               lost=not (p.returncode == 1 and "FAILED" in p.stdout and os.path.exists(os.path.join(d, "r.json"))),
               row_named=named)


# ---------------------------------------------------------------------------------------------- signals

def _catches_sigterm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = next(line for line in f if line.startswith("SigCgt:")).split()[1]
        return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))
    except (OSError, StopIteration, ValueError):
        return False


def _signal_run(pr: Probes, folder: str) -> tuple[subprocess.Popen, str, str]:
    os.makedirs(folder, exist_ok=True)
    out, log = os.path.join(folder, "r.json"), os.path.join(folder, "l.jsonl")
    p = subprocess.Popen([sys.executable, "-m", "kladder.tools.cli", "climb", SLOW, "--rungs", "1", "--device", "cpu", "-j",
                          "1", "--json", out, "--log", log, "--no-history", "--color", "never"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=folder, env=pr.env(),
                         start_new_session=True)
    return p, out, log


def _signal_verdict(p, out: str, log: str, sent: dict, err: str) -> dict:
    """What a signalled climb left. Lost: a temporary or probe file, a log or report left by a climb
    that wrote no whole report, a partial report, a signal swallowed (sent before the report was
    written, a report not interrupted), a report whose exit status is not the process's, a torn
    log. Nothing at all is right for a climb that had not started. A traceback counts where it
    passes through kladder's code (one in the interpreter's own start, before kladder's first
    line ran, is Python's and is shown apart)."""
    folder = os.path.dirname(out)
    left = sorted(os.listdir(folder))
    ours = "Traceback" in err and f"{os.sep}kladder{os.sep}" in err
    facts = {"kind": "", "lost": False, "traceback": ours}
    if "Traceback" in err and not ours:
        facts["python_start_traceback"] = True
    if [f for f in left if f.endswith(".tmp") or f.startswith(".kladder-probe")]:
        facts.update(kind="temporary file left", lost=True)
        return facts
    if not os.path.exists(out):
        facts.update(kind="before the climb started" if not left else "files left without a report", lost=bool(left))
        return facts
    try:
        with open(out) as f:
            doc = json.load(f)
    except ValueError:
        facts.update(kind="partial report", lost=True)
        return facts
    if doc["exit_code"] != p.returncode or (sent.get("unwritten") and not doc["interrupted"]):
        facts.update(kind="swallowed" if not doc["interrupted"] else "exit status differs", lost=True)
        return facts
    if doc["log"] and not _whole_lines(log):
        facts.update(kind="torn log", lost=True)
        return facts
    n = sum(len(r["points"]) for r in doc["rungs"])
    facts["kind"] = ("after the report" if not doc["interrupted"] else "interrupted, no point" if n == 0
                     else "interrupted, between points" if n < 3 else "interrupted, late")
    return facts


def _records(log: str) -> list[str]:
    try:
        with open(log) as f:
            return [json.loads(line)["record"] for line in f.read().splitlines(keepends=True) if line.endswith("\n")]
    except (OSError, ValueError):
        return []


def _moments(span: float, n: int) -> list[tuple[str, float]]:
    """Half the moments are times spread over the climb's first 60 % (its imports, its worker's
    start, the spec's import), half follow what it has done: its log made, a point logged, two,
    its end record written (the report being written)."""
    timed = [("start", 0.6 * span * (i + 0.5) / (n - n // 2)) for i in range(n - n // 2)]
    events = [("header", 0.0), ("point", 0.0), ("points", 0.0), ("end", 0.0), ("end", 0.02), ("header", 0.05),
              ("point", 0.1), ("points", 0.15), ("end", 0.05), ("end", 0.3)]
    return timed + events[:n // 2]


def _reached(event: str, log: str) -> bool:
    if event == "start":
        return True
    records = _records(log)
    return {"header": bool(records), "point": "point" in records, "points": records.count("point") >= 2,
            "end": "end" in records}[event]


def family_signals(pr: Probes, moments: int) -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        t0 = time.monotonic()
        p, out, log = _signal_run(pr, os.path.join(pr.work, "sig-baseline"))
        p.communicate(timeout=600)
        span = time.monotonic() - t0
        print(f"   signals: a climb takes {span:.1f} s under load ({cores} CPU-bound processes)", flush=True)
        plan = [(sig, group, event, delay) for sig in (signal.SIGINT, signal.SIGTERM) for group in (False, True)
                for event, delay in _moments(span, moments)]
        for k in range(0, len(plan), 4):
            runs = []
            for j, (sig, group, event, delay) in enumerate(plan[k:k + 4]):
                p, out, log = _signal_run(pr, os.path.join(pr.work, f"sig-{k + j}"))
                runs.append({"sig": sig, "group": group, "event": event, "delay": delay, "t0": time.monotonic(),
                             "due": None, "p": p, "out": out, "log": log, "sent": None})
            while any(r["sent"] is None for r in runs):
                now = time.monotonic()
                for r in runs:
                    if r["sent"] is not None:
                        continue
                    if r["due"] is None and (r["p"].poll() is not None or _reached(r["event"], r["log"])):
                        r["due"] = (r["t0"] if r["event"] == "start" else now) + r["delay"]
                    if r["due"] is not None and now >= r["due"]:
                        kladders, written = _catches_sigterm(r["p"].pid), os.path.exists(r["out"])
                        try:
                            os.killpg(r["p"].pid, r["sig"]) if r["group"] else r["p"].send_signal(r["sig"])
                            r["sent"] = {"sent": True, "kladders": kladders,
                                         "unwritten": not written and not os.path.exists(r["out"])}
                        except ProcessLookupError:
                            r["sent"] = {"sent": False}
                time.sleep(0.002)
            for r in runs:
                _, err = r["p"].communicate(timeout=600)
                facts = _signal_verdict(r["p"], r["out"], r["log"], r["sent"], err)
                name = (f"{signal.Signals(r['sig']).name} to the {'group' if r['group'] else 'process'} at "
                        f"{r['event']} + {r['delay']:.2f} s")
                pr.row("signals", name, r["p"], lost=facts["lost"], traceback=facts["traceback"], moment=facts["kind"])
    finally:
        for h in hogs:
            h.kill()
            h.wait()


# ---------------------------------------------------------------------------------------------- stored

def _history(path: str, src: str) -> None:
    code = f'''
import sys
sys.path.insert(0, {src!r})
from kladder.history.store import History
h = History({path!r})
for n in range(2):
    cid = h.begin("climb", "double", "spec.py", "cpu", "0.1.0", f"2026-12-06T10:0{{n}}:00", f"run{{n}}", {{"torch": "2.13"}})
    for i in range(3):
        h.point(cid, {{"id": f"r1-N={{i + 1}}", "rung": 1, "status": "passed", "seconds": 0.1, "stages": {{}},
                      "hashes": {{"y": f"h{{i}}"}}, "point": {{"spec": "double"}}}})
    h.end(cid, "2026-12-06T10:09:00", "passed", 0, None, "cpu", [{{"rung": 1, "verdict": "passed", "seconds": 1}}])
h.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
h.close()
'''
    subprocess.run([sys.executable, "-c", code], check=True)


def family_stored(pr: Probes) -> None:
    damages = {}
    d = tempfile.mkdtemp(dir=pr.work, prefix="stored-")
    pages = os.path.join(d, "pages.sqlite")
    _history(pages, pr.src)
    with open(pages, "r+b") as f:
        for page in range(1, os.path.getsize(pages) // 4096):
            f.seek(page * 4096)
            f.write(b"\xde\xad\xbe\xef" * 1024)
    damages["garbage inside its pages"] = pages
    fp = os.path.join(d, "fp.sqlite")
    _history(fp, pr.src)
    db = sqlite3.connect(fp)
    db.execute("UPDATE climbs SET fingerprint = 'garbage' WHERE id = 1")
    db.commit()
    db.close()
    damages["garbage in climbs.fingerprint"] = fp
    for what, path in damages.items():
        for cmd in (["history"], ["diff"], ["golden", "record", "double"]):
            p = pr.kladder(*cmd, "--history", path, cwd=d)
            pr.row("stored", f"{' '.join(cmd)} on a history with {what}", p, refused=p.returncode == 2,
                   names_path=path in p.stderr)
    p = pr.kladder("climb", TRIVIAL, "--device", "cpu", "--rungs", "1", "--json", os.path.join(d, "r.json"),
                   "--no-history", cwd=d)
    with open(os.path.join(d, "r.json")) as f:
        doc = json.load(f)
    edits = {"rungs 'x'": lambda x: x.update(rungs="x"),
             "points as strings": lambda x: x["rungs"][0].update(points=["a", "b"]),
             "a fingerprint list": lambda x: x.update(fingerprint=[1, 2]),
             "a finding's where a number": lambda x: x["rungs"][0]["points"][0].update(
                 status="failed", findings=[{"check": "values", "where": 5}])}
    for what, edit in edits.items():
        bad = json.loads(json.dumps(doc))
        edit(bad)
        path = os.path.join(d, "bad.json")
        with open(path, "w") as f:
            json.dump(bad, f)
        p = pr.kladder("report", path, "--html", os.path.join(d, "bad.html"), cwd=d)
        pr.row("stored", f"report on JSON with {what}", p, refused=p.returncode == 2,
               says_schema="report.schema.json" in p.stderr)
    path = os.path.join(d, "deep.json")
    with open(path, "w") as f:
        f.write('{"rungs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    p = pr.kladder("report", path, "--html", os.path.join(d, "deep.html"), cwd=d)
    pr.row("stored", "report on JSON 100,000 levels deep", p, refused=p.returncode == 2)


# ---------------------------------------------------------------------------------------------- procs

def _pids(pids_file: str) -> list[int]:
    try:
        with open(pids_file) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def _alive(pids_file: str) -> list[int]:
    alive = []
    for pid in _pids(pids_file):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except OSError:
            pass
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return alive


def family_procs(pr: Probes) -> None:
    for how in ("to its end", "SIGINT mid-climb", "SIGKILL mid-climb"):
        d = tempfile.mkdtemp(dir=pr.work, prefix="procs-")
        pids = os.path.join(d, "pids")
        cmd = [sys.executable, "-m", "kladder.tools.cli", "climb", pr.forking, "--device", "cpu", "--rungs", "1", "-j", "1",
               "--no-history", "--color", "never", "--json", os.path.join(d, "r.json")]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=d,
                             env=pr.env(KLT_PIDS=pids), start_new_session=True)
        if how != "to its end":
            while p.poll() is None and len(_pids(pids)) < 2:
                time.sleep(0.01)
            p.send_signal(signal.SIGINT if how.startswith("SIGINT") else signal.SIGKILL)
        _, err = p.communicate(timeout=600)
        time.sleep(1.0)                        # the lifeline's kill, after a SIGKILL, is the workers' to do
        p.stderr = err
        left = _alive(pids)
        pr.row("procs", f"a forking kernel's climb, {how}", p, lost=bool(left),
               traceback=how != "SIGKILL mid-climb" and "Traceback" in err, survivors=len(left))


def summary(rows: list[dict]) -> dict:
    fams = {}
    for r in rows:
        f = fams.setdefault(r["family"], {"probes": 0, "tracebacks": 0, "lost": 0, "code_ran": 0, "not_refused": 0,
                                          "field_not_named": 0})
        f["probes"] += 1
        f["not_refused"] += r.get("refused") is False           # a bad point or store that was not exit 2
        f["field_not_named"] += r.get("names_the_field") is False
        f["tracebacks"] += r["traceback"]
        f["lost"] += r["lost"]
        f["code_ran"] += r["code_ran"]
    total = {k: sum(f[k] for f in fams.values()) for k in ("probes", "tracebacks", "lost", "code_ran", "not_refused",
                                                           "field_not_named")}
    return {"families": fams, "total": total}


def markdown(result: dict) -> str:
    lines = [f"# Hostile probes ({result['src']})", "", f"{result['when']}, {result['machine']}; "
             f"{result['seconds']:.0f} s.", "", "| family | probes | tracebacks | lost reports | code run from a point | not refused (exit 2) | "
             "refused without naming the field |", "|---|---|---|---|---|---|---|"]
    for fam, f in result["summary"]["families"].items():
        lines.append(f"| {fam} | {f['probes']} | {f['tracebacks']} | {f['lost']} | {f['code_ran']} | {f['not_refused']} | "
                     f"{f['field_not_named']} |")
    t = result["summary"]["total"]
    lines += [f"| **all** | {t['probes']} | {t['tracebacks']} | {t['lost']} | {t['code_ran']} | {t['not_refused']} | "
              f"{t['field_not_named']} |", "",
              "| family | probe | exit | traceback | lost | code run | facts |", "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        facts = {k: v for k, v in r.items() if k not in ("family", "probe", "exit", "traceback", "lost", "code_ran")}
        lines.append(f"| {r['family']} | {r['probe']} | {r['exit']} | {int(r['traceback'])} | {int(r['lost'])} | "
                     f"{int(r['code_ran'])} | {json.dumps(facts) if facts else ''} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.path.join(ROOT, "src"), help="the kladder source tree to probe (its src/)")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--moments", type=int, default=10, help="moments per signal and target (process, group)")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--markdown", metavar="PATH")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="kladder-hostile-")
    pr = Probes(os.path.abspath(args.src), work)
    try:
        for fam in args.families.split(","):
            if fam == "signals":
                family_signals(pr, args.moments)
            else:
                globals()[f"family_{fam}"](pr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"src": os.path.abspath(args.src), "when": time.strftime("%Y-%m-%d %H:%M"),
              "machine": f"{os.cpu_count()} cores, shared with other work", "seconds": time.monotonic() - t0,
              "summary": summary(pr.rows), "rows": pr.rows}
    print(json.dumps(result["summary"], indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(result))
    t = result["summary"]["total"]
    return 0 if t["tracebacks"] == t["lost"] == t["code_ran"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
