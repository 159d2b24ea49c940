"""compute-sanitizer, driven for the user (rung 5): the point's calls run in a child process
under `compute-sanitizer --tool memcheck | racecheck | initcheck | synccheck`, and the errors it
prints become typed records (tool, kind, kernel, source file and line, access, size, address).

Why a child with PYTORCH_NO_CUDA_MEMORY_CACHING=1 and no guard bytes: memcheck knows only the
driver's allocations. Under PyTorch's caching allocator a tensor is a slice of a bigger block,
and a store a few elements past its end stays inside the block: measured on an H200, 0 errors
for a Triton kernel writing 5 floats past a 1000-float output, seen only with the cache off.
kladder's own guard bytes would hide it the same way, so the child allocates every tensor bare.
initcheck counts memory as written once anything wrote it: the child leaves torch's
fill_uninitialized_memory off, so a workspace the launcher takes from torch.empty and the kernel
reads before writing is reported. The child makes CALLS calls (two input draws) and exits.

What each tool cannot see is said with its result (report/words/modes.py): racecheck covers shared
memory only, never a handshake between programs through global memory (rung 5's repetition is
the check for that)."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ...core.notation import Mode
from ...core.outcome import KernelError, NoteKind, Skip, SpecBroken
from . import base
from .base import Sanitized

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
CALLS = 2
REF_ENV = "KLADDER_SPEC_REF"
LOGS_ENV = "KLADDER_SANITIZER_LOGS"   # a directory: each run's compute-sanitizer log is kept there
FOUND_ERRORS = 99                     # compute-sanitizer's exit status when it reported errors (--error-exitcode)
KERNEL_RAISED = 3
OPTIONS = ["--print-limit", "1000", "--error-exitcode", str(FOUND_ERRORS), "--report-api-errors", "no",
           "--show-backtrace", "device"]


class Sanitize(base.Mode):
    name = "sanitize"
    rungs = (5,)
    needs_cuda = True
    starts_child = True
    start_order = 0
    backward = True
    measured_elsewhere = True

    def observe(self, h):
        tool = dict(h.point.repeat).get("tool", "memcheck")
        if tool not in TOOLS:
            raise ValueError(f"point.repeat tool {tool!r}: use one of {TOOLS}.")
        exe, searched = find_sanitizer()
        if exe is None:
            raise Skip(NoteKind.NO_SANITIZER, tool=tool, searched=searched)
        ref = os.environ.get(REF_ENV)
        if not ref:
            raise Skip(NoteKind.OUTSIDE_CLIMB, mode="sanitize")
        text, code, err = _run(exe, tool, ref, h)
        errors, summary = parse(text, tool)
        if not errors and code == KERNEL_RAISED:
            raise KernelError(RuntimeError(err), f"under compute-sanitizer {tool}")
        if not errors and code not in (0, FOUND_ERRORS):
            raise SpecBroken(NoteKind.PROCESS_FAILED, label=f"compute-sanitizer {tool}", text=err or f"exit {code}")
        yield Sanitized(tool, errors, summary, CALLS)


def find_sanitizer() -> tuple[str | None, list[str]]:
    """compute-sanitizer on PATH, else in the CUDA toolkit's usual places."""
    places = [os.path.join(os.environ[v], "bin") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    places += ["/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer"]
    found = shutil.which("compute-sanitizer") or shutil.which("compute-sanitizer", path=os.pathsep.join(places))
    return found, ["PATH"] + places


def _run(exe: str, tool: str, ref: str, h) -> tuple[str, int, str]:
    from ..isolation import point_timeout, worker_env
    point = dataclasses.replace(h.point, mode=Mode.EAGER, repeat=())
    env = {**worker_env(h.device), "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    timeout = float(dict(h.point.repeat).get("seconds", 0)) or point_timeout(h.spec, h.device) * 3
    with tempfile.TemporaryDirectory(prefix="kladder-sanitize-") as d:
        log = os.path.join(d, "sanitizer.txt")
        cmd = [exe, "--tool", tool, "--log-file", log, *OPTIONS, sys.executable, "-m", "kladder.run.modes.sanitize",
               ref, h.device, point.to_json()]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                text = f.read()
        else:
            text = p.stdout
    keep = os.environ.get(LOGS_ENV)
    if keep:                                   # the tool's own words, for whoever wants more than the findings
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, f"{h.point.spec}-{tool}-{h.point.seed}.log"), "w") as f:
            f.write(text)
    err = (p.stderr.strip().splitlines() or [""])[-1]
    return text, p.returncode, err


# ---------------------------------------------------------------------------- the report
# compute-sanitizer prefixes every line with "=========": a record starts at an unindented
# line ("Invalid __global__ write of size 4 bytes", "Error: Race reported between ...") and
# goes on with indented ones ("at ...", "by thread ...", "Address ... is out of bounds").
PREFIX = re.compile(r"^=+ ?")
STARTS = (
    ("invalid", re.compile(r"^Invalid (?P<space>__\w+__) (?P<access>read|write|atomic) of size (?P<size>\d+) bytes?")),
    ("misaligned", re.compile(r"^Misaligned (?:address|access)?.*?(?P<space>__\w+__)? ?(?P<access>read|write|atomic)? ?of size (?P<size>\d+)")),
    ("uninitialized", re.compile(r"^Uninitialized (?P<space>__\w+__) memory (?P<access>read|write|atomic) of size (?P<size>\d+) bytes?")),
    ("race", re.compile(r"^(?P<severity>Error|Warning|WARNING|ERROR|Info|INFO): (?:Potential )?(?:\w+ hazard|Race reported) "
                        r"between (?P<first>\w+) access at (?P<at>.+)$")),
    ("barrier", re.compile(r"^(?P<what>Barrier error detected\..*|Invalid arguments? .*barrier.*|.*syncwarp.*error.*)$")),
    ("hardware", re.compile(r"^(?P<what>(?:Warp|Device|Lane) \w+.*(?:exception|error|Error).*)$")),
)
AT = re.compile(r"^at (?P<where>.+?)(?: in (?P<loc>.+?))?(?: \[(?P<hazards>[\d,]+) hazards?\])?$")
SECOND = re.compile(r"^and (?P<second>\w+) access at (?P<at>.+?)(?: \[(?P<hazards>[\d,]+) hazards?\])?$")
BY = re.compile(r"^by thread \((?P<thread>[\d, ]+)\) in block \((?P<block>[\d, ]+)\)")
ADDRESS = re.compile(r"^(?:Address|Access to) (?P<address>0x[0-9a-fA-F]+)(?P<rest>.*)$")
SUMMARY = re.compile(r"^(?:ERROR SUMMARY|RACECHECK SUMMARY): (?P<n>[\d,]+) (?:errors?|hazards? displayed)")
FILE_LINE = re.compile(r"^(?P<file>.+?\.\w+):(?P<line>\d+)(?::(?P<func>.+))?$")


def parse(text: str, tool: str) -> tuple[list[dict], int | None]:
    """compute-sanitizer's report as records; the count its summary line gives (None without one)."""
    errors, cur, summary = [], None, None
    for raw in text.splitlines():
        if not PREFIX.match(raw):
            continue
        body = PREFIX.sub("", raw, count=1)
        line = body.strip()
        if not line:
            cur = None
            continue
        m = SUMMARY.match(line)
        if m:
            summary, cur = int(m["n"].replace(",", "")), None
            continue
        if body[:1] != " ":
            cur = _start(line, tool)
            if cur is not None:
                errors.append(cur)
            continue
        if cur is not None:
            _more(cur, line)
    return errors, summary


def _start(line: str, tool: str) -> dict | None:
    for kind, rx in STARTS:
        m = rx.match(line)
        if not m:
            continue
        rec = {"tool": tool, "kind": kind, "text": line, "kernel": "", "file": "", "line": 0, "access": "",
               "size": 0, "address": "", "detail": "", "thread": "", "block": "", "count": 1}
        g = m.groupdict()
        rec["access"] = g.get("access") or ""
        rec["size"] = int(g.get("size") or 0)
        if kind == "race":
            rec["access"] = g["first"].lower()
            rec["severity"] = g["severity"].lower()
            _at(rec, g["at"])
        return rec
    return None


def _more(rec: dict, line: str) -> None:
    m = SECOND.match(line)
    if m and rec["kind"] == "race":
        second = {"access": m["second"].lower(), "kernel": "", "file": "", "line": 0}
        _place(second, *_split_at(m["at"]))
        rec["second"] = second
        if m["hazards"]:
            rec["count"] = int(m["hazards"].replace(",", ""))
        return
    m = AT.match(line)
    if m and not rec["kernel"] and not rec["file"]:
        _place(rec, m["where"], m["loc"])
        return
    m = BY.match(line)
    if m:
        rec["thread"], rec["block"] = m["thread"].replace(" ", ""), m["block"].replace(" ", "")
        return
    m = ADDRESS.match(line)
    if m:
        rec["address"] = m["address"]
        rest = m["rest"].strip()
        if rest:
            rec["detail"] = rest
        return
    if line.startswith("and is ") and rec["kind"] != "race":
        rec["detail"] = (rec["detail"] + " " + line).strip()


def _at(rec: dict, text: str) -> None:
    where, loc = _split_at(text)
    _place(rec, where, loc)


def _split_at(text: str) -> tuple[str, str | None]:
    m = AT.match("at " + text)
    return (m["where"], m["loc"]) if m else (text, None)


def _place(rec: dict, where: str, loc: str | None) -> None:
    """Both layouts the tool has used: `at kernel+0x1b0 in file.py:35` (recent), and
    `at 0x1b0 in /path/file.py:35:kernel` or `at 0x150 in void kernel<...>(...)` (older)."""
    pc_only = re.fullmatch(r"0x[0-9a-fA-F]+", where) is not None
    if not pc_only:
        rec["kernel"] = re.sub(r"\+0x[0-9a-fA-F]+$", "", where)
    if loc:
        m = FILE_LINE.match(loc)
        if m:
            rec["file"], rec["line"] = m["file"], int(m["line"])
            if m["func"] and not rec["kernel"]:
                rec["kernel"] = m["func"]
        elif not rec["kernel"]:
            rec["kernel"] = loc


# ---------------------------------------------------------------------------- the child
def child(argv: list[str]) -> int:
    """python -m kladder.run.modes.sanitize REF DEVICE POINT: the point's calls, on bare
    allocations, then exit; compute-sanitizer watches from outside."""
    import torch

    from ...gen.load import load_spec
    from ...core.point import Point
    from ..harness import Harness
    ref, device, text = argv[:3]
    spec = load_spec(ref)
    point = Point.from_dict(json.loads(text))
    h = Harness(spec, point, device, guard=0)
    for i in range(CALLS):
        prep = h.prepare(seed=point.seed + i)
        try:
            h.call(prep, f"call {i + 1} of {CALLS}")
        except KernelError as e:
            print(f"the kernel raised {type(e.error).__name__}: {e.error}", file=sys.stderr)
            return KERNEL_RAISED
    if device == "cuda":
        torch.cuda.synchronize()
    return 0


MODE = Sanitize()


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
