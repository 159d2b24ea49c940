"""The messages kladder's processes send each other, by name: one frozen dataclass a message,
its `kind` the tag that names it on the wire (one JSON line: {"kind": ..., its fields}), the
same class written by one end and read by the other.

A worker (run/worker.py: `python -m kladder.run.worker REF DEVICE`, or a fork of the climb's
process, run/forked.py) and its parent (run/workers.Worker), over the worker's stdin and its
protocol pipe:
  parent -> worker   Run           a point to run, and the fork server its modes' own processes
                                   fork from (None: they start afresh)
  worker -> parent   Hello         it is ready: the device's name, its free memory (CUDA), the
                                   environment's fingerprint
                     StartFailed   it could not start: what failed, and whether the device
                                   refused a CUDA context (the parent retries then)
                     StageBegan    a stage of the point began (run/stages.py): the parent's
                                   watchdog gives the kernel's stage the timeout, kladder's a budget
                     Answer        the point's outcome, whether the worker must end after it (a
                                   device fault), the CPU seconds of the point's own processes
                                   the fork server forked, each stage's peak memory
The fork server (run/forkserver.py) and a client (run/forkclient.py), one Unix-socket connection
a child:
  client -> server   Spawn         `python -m ARGV` with exactly `env` in `cwd`; its stdin, stdout,
                                   stderr and the passed descriptors ride with the message, each
                                   passed one's number put in the variable `fd_env` names
                     Kill          kill the child's process group (so does closing the connection)
  server -> client   Spawned       the child's pid
                     Refused       why the child cannot be forked as a new process would start
                     Exited        the child's exit status (a signal as -N) and its CPU seconds
  server -> climb    ServerReady   on the server's stdout, once its imports are done: it serves

to_wire(message) is the line; from_wire(line, *expected) reads one back into its class. A line
that is no message (not JSON, an unknown kind, a field missing or unknown) or one of a kind the
reader does not expect there raises ProtocolError: kladder's own bug, said, never dropped."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.outcome import Outcome, Stage
from ..core.point import Point


class ProtocolError(RuntimeError):
    """A line one of kladder's processes sent that is no message the reader takes there."""


KINDS: dict[str, type[Message]] = {}       # kind -> its class, filled as each class is made


@dataclass(frozen=True)
class Message:
    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if not cls.kind or cls.kind in KINDS:
            raise TypeError(f"{cls.__name__}: a message needs a kind of its own (kind {cls.kind!r} is taken or empty)")
        KINDS[cls.kind] = cls

    def fields(self) -> dict[str, Any]:
        """Its fields as JSON values."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> Message:
        return cls(**d)


def to_wire(msg: Message) -> str:
    """The message as one line of JSON, its kind first."""
    return json.dumps({"kind": msg.kind, **msg.fields()}) + "\n"


def from_wire(line: str | bytes, *expected: type[Message]) -> Message:
    """The message a line holds, of one of the `expected` kinds (none given: any kind); anything
    else raises ProtocolError naming what came and what was expected."""
    want = " or ".join(c.kind for c in expected) or "any kind"
    try:
        d = json.loads(line)
    except ValueError:
        raise ProtocolError(f"not a message (expected {want}): {_shown(line)}") from None
    if not isinstance(d, dict) or d.get("kind") not in KINDS:
        got = d.get("kind") if isinstance(d, dict) else None
        raise ProtocolError(f"unknown message kind {got!r} (known: {', '.join(sorted(KINDS))}; expected {want}): "
                            f"{_shown(line)}")
    cls = KINDS[d.pop("kind")]
    if expected and cls not in expected:
        raise ProtocolError(f"a {cls.kind} message where {want} was expected: {_shown(line)}")
    try:
        return cls.from_fields(d)
    except (TypeError, KeyError, ValueError) as e:
        raise ProtocolError(f"a malformed {cls.kind} message ({type(e).__name__}: {e}): {_shown(line)}") from None


def _shown(line: str | bytes) -> str:
    text = line.decode(errors="replace") if isinstance(line, bytes) else line
    text = text.strip()
    return repr(text if len(text) <= 200 else text[:197] + "...")


# ---------------------------------------------------------------------------- a worker and its parent
@dataclass(frozen=True)
class Run(Message):
    kind: ClassVar[str] = "run"
    point: Point
    forkserver: str | None = None          # the fork server's socket, for the modes' own processes

    def fields(self) -> dict[str, Any]:
        return {"point": self.point.to_dict(), "forkserver": self.forkserver}

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> Run:
        return cls(**{**d, "point": Point.from_dict(d["point"])})


@dataclass(frozen=True)
class Hello(Message):
    kind: ClassVar[str] = "hello"
    device_name: str
    free_bytes: int | None = None          # the device's free memory at the worker's start (CUDA)
    fingerprint: dict | None = None        # kladder.core.fingerprint: the environment as the worker sees it

    def facts(self) -> dict[str, Any]:
        """What the pool keeps of it (Pool.hello)."""
        return self.fields()


@dataclass(frozen=True)
class StartFailed(Message):
    kind: ClassVar[str] = "start_failed"
    error: str
    device_error: bool = False             # the device refused a CUDA context: others may hold it


@dataclass(frozen=True)
class StageBegan(Message):
    kind: ClassVar[str] = "stage"
    stage: Stage

    def fields(self) -> dict[str, Any]:
        return {"stage": str(self.stage)}

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> StageBegan:
        return cls(**{**d, "stage": Stage(d["stage"])})


@dataclass(frozen=True)
class Answer(Message):
    kind: ClassVar[str] = "answer"
    outcome: Outcome
    fatal: bool = False                    # the worker ends after it (exit 3): a device fault poisons it
    children_cpu_s: float = 0.0            # CPU seconds of the point's own processes the fork server forked
    peak: dict | None = None               # {stage: [host bytes, device bytes or None]} (sampling.PeakMemory)

    def fields(self) -> dict[str, Any]:
        return {"outcome": self.outcome.to_dict(), "fatal": self.fatal,
                "children_cpu_s": round(self.children_cpu_s, 3), "peak": self.peak}

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> Answer:
        return cls(**{**d, "outcome": Outcome.from_dict(d["outcome"])})


# ---------------------------------------------------------------------------- the fork server and a client
@dataclass(frozen=True)
class Spawn(Message):
    kind: ClassVar[str] = "spawn"
    argv: list                             # [MODULE, ARGS...]: `python -m MODULE ARGS`
    env: dict
    cwd: str
    fd_env: list                           # a variable for each passed descriptor after stdin, stdout, stderr

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> Spawn:
        """Typed as the server uses it: a request of other types is refused as malformed, never
        an exception inside the server's loop (an env given as a list once ended a server)."""
        msg = cls(**d)
        strs = lambda xs: isinstance(xs, list) and all(isinstance(x, str) for x in xs)
        if not (strs(msg.argv) and msg.argv):
            raise ValueError(f"argv must be a non-empty list of strings, not {msg.argv!r}")
        if not (isinstance(msg.env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in msg.env.items())):
            raise ValueError("env must map strings to strings")
        if not isinstance(msg.cwd, str):
            raise ValueError(f"cwd must be a string, not {msg.cwd!r}")
        if not strs(msg.fd_env):
            raise ValueError(f"fd_env must be a list of strings, not {msg.fd_env!r}")
        return msg


@dataclass(frozen=True)
class Kill(Message):
    kind: ClassVar[str] = "kill"


@dataclass(frozen=True)
class Spawned(Message):
    kind: ClassVar[str] = "spawned"
    pid: int


@dataclass(frozen=True)
class Refused(Message):
    kind: ClassVar[str] = "refused"
    why: str
    bad_message: bool = False              # the request was no Spawn message (kladder's bug: the client raises)


@dataclass(frozen=True)
class Exited(Message):
    kind: ClassVar[str] = "exited"
    exit: int
    cpu_s: float = 0.0


@dataclass(frozen=True)
class ServerReady(Message):
    kind: ClassVar[str] = "server_ready"
