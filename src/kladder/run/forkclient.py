"""The climb's side of the fork server (run/forkserver.py): Server starts one (`python -m
kladder.run.forkserver SOCKET LABEL`) and says when it serves; Attached is one another process
started (KLADDER_FORKSERVER=SOCKET: the test suite's); spawn asks a server for a child
(`python -m MODULE ARGS` forked warm) and Forked is that child, as much like subprocess.Popen as
the climb uses; run is subprocess.run with the child forked where the server can serve it.

The conversation's messages are run/protocol.py's: a Spawn request with the child's descriptors
attached, answered Spawned (or Refused), then Exited when the child ended; the client sends Kill
(or closes the connection) to kill the child's group."""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from .forkserver import incompatible
from .protocol import Exited, Kill, ProtocolError, Refused, ServerReady, Spawn, Spawned, from_wire, to_wire



@dataclass
class Children:
    """What a point's modes need to start processes of their own, handed down from the worker's
    Run message through trial.run_point to the Harness (`h.children`), never read from the
    environment: the spec's reference each child loads (None outside a worker: a mode that
    needs one is skipped, NoteKind.OUTSIDE_CLIMB), the fork server's socket they fork from (None:
    each starts afresh), and the CPU seconds of those the server forked, added up by `run` (the
    worker's Answer reports them: the point's own work, not other load)."""
    ref: str | None = None
    forkserver: str | None = None
    cpu_s: float = 0.0


class ServerLost(RuntimeError):
    """A forked process ended after its server did: its exit status is lost with the server."""


class Forked:
    """A process forked by the server, as much like subprocess.Popen as the climb uses: pid,
    returncode, poll, wait, kill (its whole process group). `lost`: the server went away before
    the child's exit was known (the child is killed then; the caller starts it afresh)."""

    def __init__(self, conn: socket.socket, pid: int, stdin=None, stdout=None):
        self.conn, self.pid = conn, pid
        self.stdin, self.stdout = stdin, stdout
        self.returncode: int | None = None
        self.cpu_s = 0.0
        self.lost = False
        self._buf = b""

    def _take(self, timeout: float | None) -> bool:
        """Read the exit message if it arrives within `timeout` (None: wait). True once known."""
        if self.returncode is not None:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self.conn.settimeout(left)
            try:
                chunk = self.conn.recv(4096)
            except (TimeoutError, socket.timeout, BlockingIOError):
                return False
            except OSError:
                chunk = b""
            if not chunk:                       # the server is gone: the exit status with it
                self.lost = True
                self._killpg()
                self.returncode = -signal.SIGKILL
                return True
            self._buf += chunk
        msg = from_wire(self._buf.partition(b"\n")[0], Exited)
        self.returncode, self.cpu_s = msg.exit, msg.cpu_s
        self._close()
        return True

    def poll(self) -> int | None:
        self._take(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._take(timeout):
            raise subprocess.TimeoutExpired(["forked", str(self.pid)], timeout)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL to the child's whole process group, by the server (which has not reaped it)."""
        if self.returncode is not None:
            return
        try:
            self.conn.sendall(to_wire(Kill()).encode())
        except OSError:
            self._killpg()

    def _killpg(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()


def spawn(argv: list[str], env: dict, fds: tuple[int, int, int], pass_fds: dict | None = None,
          address: str | None = None, wait_s: float = 600.0, cwd: str | None = None) -> Forked | None:
    """`python ARGV` (ARGV: ['-m', module, args...]) forked from the server at `address`, with exactly `env`, stdin/stdout/stderr `fds`, and `pass_fds` {variable: fd}: each
    fd passed, its number in the child put in that variable; in `cwd` (default: this process's).
    None where the server cannot serve it (none given, gone, refused, or no pid within `wait_s`):
    start it afresh then."""
    if not address or len(argv) < 2 or argv[0] != "-m":
        return None
    names = list(pass_fds or {})
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(wait_s)
        conn.connect(address)
        req = to_wire(Spawn(argv[1:], env, os.fspath(cwd or os.getcwd()), names)).encode()
        socket.send_fds(conn, [req], [*fds, *(pass_fds[n] for n in names)])
        buf = b""
        while b"\n" not in buf:
            chunk = conn.recv(4096)
            if not chunk:
                raise ConnectionError("the fork server closed the connection")
            buf += chunk
    except (OSError, ValueError):
        with contextlib.suppress(OSError, UnboundLocalError):
            conn.close()
        return None
    line, _, rest = buf.partition(b"\n")
    msg = from_wire(line, Spawned, Refused)
    if isinstance(msg, Refused):
        conn.close()
        if msg.bad_message:                 # kladder's own bug, never a reason to start afresh quietly
            raise ProtocolError(f"the fork server took the request for no message: {msg.why}")
        return None
    child = Forked(conn, msg.pid)
    child._buf = rest
    return child


def run(cmd: list[str], env: dict, timeout: float, children: Children | None = None) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout), the child
    forked from `children.forkserver` where it can be (cmd: [sys.executable, '-m', module, ...]).
    A timeout kills the child (subprocess.TimeoutExpired, as subprocess.run raises it); a child
    whose server died under it is run again afresh. A forked child's CPU seconds are added to
    `children.cpu_s`."""
    if cmd and cmd[0] == sys.executable and children is not None and children.forkserver:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as null:
            child = spawn(cmd[1:], env, (null.fileno(), out.fileno(), err.fileno()), address=children.forkserver)
            if child is not None:
                try:
                    code = child.wait(timeout)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                    raise subprocess.TimeoutExpired(cmd, timeout) from None
                if not child.lost:
                    children.cpu_s += child.cpu_s
                    out.seek(0)
                    err.seek(0)
                    return subprocess.CompletedProcess(cmd, code, out.read().decode(errors="replace"),
                                                       err.read().decode(errors="replace"))
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


class Attached:
    """A server another process started and owns, reached by its socket (KLADDER_FORKSERVER=SOCKET:
    the test suite starts one a pytest process, and each climb it runs forks from it instead of
    starting a server and workers of its own). It refuses what it cannot serve (`incompatible`,
    checked on its side), and the caller starts that process afresh."""

    def __init__(self, address: str):
        self.address = address

    def ready(self, wait_s: float = 0.0) -> bool:
        return os.path.exists(self.address)

    def serves(self, env: dict) -> bool:
        return self.ready()

    def close(self) -> None:
        pass


class Server:
    """The climb's server, started by its Pool: `python -m kladder.run.forkserver SOCKET LABEL`
    with `env` (a worker's environment). `ready()` says, without waiting, whether it serves."""

    def __init__(self, env: dict, label: str = ""):
        self.dir = tempfile.mkdtemp(prefix="kladder-fork-")
        self.address = os.path.join(self.dir, "s")
        self.env = dict(env)
        self._ready = False
        self._ended = False                  # it said something else than 'ready', or nothing: it will not serve
        self._lock = threading.Lock()
        self.proc = subprocess.Popen([sys.executable, "-m", "kladder.run.forkserver", self.address, label],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=self.env, start_new_session=True)

    def ready(self, wait_s: float = 0.0) -> bool:
        """Whether it serves, waiting up to `wait_s` for its 'ready'. The wait is outside the lock:
        a thread that only asks (a lane choosing how to start a worker, Pool.kill on Ctrl-C) is
        never held up by one that waits for the server's start (seconds of torch's import)."""
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                if self._ready or self._ended or self.proc.poll() is not None:
                    return self._ready and self.proc.poll() is None
                if self._readable(0.0):
                    try:
                        line = self.proc.stdout.readline()
                    except (OSError, ValueError):          # closed under us (the climb is ending)
                        return False
                    self._ready = _says_ready(line)
                    self._ended = not self._ready          # its end, or another line: it will not serve
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._readable(min(left, 0.5))

    def _readable(self, wait_s: float) -> bool:
        """Its stdout has a line (or its end) to read within `wait_s`."""
        sel = selectors.DefaultSelector()
        try:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            return bool(sel.select(wait_s))
        except (OSError, ValueError):                      # closed under us: a read says so
            return True
        finally:
            sel.close()

    def serves(self, env: dict) -> bool:
        return self.ready() and incompatible(self.env, env) is None

    def close(self) -> None:
        """Its stdin closed: it kills every child it forked and exits."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        with contextlib.suppress(OSError):
            self.proc.stdout.close()
        with contextlib.suppress(OSError):
            os.unlink(self.address)
        with contextlib.suppress(OSError):
            os.rmdir(self.dir)



def _says_ready(line: bytes) -> bool:
    """The server's first line on its stdout is ServerReady. Its end (an empty read: it died
    while importing) or another line (a module it preloaded printed on stdout) means it will
    not serve, and the climb starts its processes afresh, as without a server."""
    try:
        return isinstance(from_wire(line, ServerReady), ServerReady)
    except ProtocolError:
        return False
