"""A warm fork server: the climb's new Python processes (a fresh worker for an A-B-A point, a
mode's own process for the jit-cache, cache-key, flags, dispatch-with-variables and import
points) forked from a process that has already imported torch, numpy, Triton and kladder's
run side, instead of each paying that import again (seconds on a loaded 2-core machine).

What a child gets is what `python -m MODULE ARGS` started afresh gets, for everything a point
tests: the environment it asked for, exactly (os.environ replaced before MODULE runs, so the
spec and the kernel's module, never imported by the server, read their variables as a new
process would, and so do Triton's and Inductor's cache directories, which both read the
variable when they are used); its own stdin, stdout, stderr and passed descriptors; its own
session (its process group, killed whole); its exit status as subprocess reports it (a signal
as -N). The server never touches CUDA (it refuses to fork once the CUDA driver is loaded in
it), so on a GPU the child makes its own context after the fork.

Why not multiprocessing's forkserver: its server belongs to the one process that started it
(a worker could not ask the climb's), it runs a pickled function, not a module as __main__
(and imports the parent's __main__ into each child), and a child outlives a requester that
died. Here the climb starts one server (Pool), the workers reach it by its socket, and a
child dies with the connection of the process that asked for it.

Where a request cannot be served as a new process would be (an environment variable that
differs from the server's and that torch, Triton or the interpreter reads at import or start,
LD_PRELOAD say), where the server is gone or never started, `spawn` returns None and the
caller starts the process as before (subprocess): silently correct, only slower.

Protocol: one Unix-socket connection per child. The client sends one JSON line {argv, env,
cwd, fd_env} with its descriptors (stdin, stdout, stderr, then the passed ones) attached; the
server answers {"pid": N} (or {"refused": why}), then {"exit": code, "cpu_s": seconds} when
the child ended. The client writing "kill" or closing the connection kills the child's group.
The server ends, killing every child it forked, when its stdin closes (the climb is gone)."""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Variables read only when used, never at import: they may differ between the server and a child.
LAZY_VARS = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_VISIBLE_DEVICES", "KLADDER_SPEC_REF",
             "KLADDER_LIFELINE", "KLADDER_FORKSERVER")
# Prefixes of what the interpreter, the C library, torch, numpy, Triton and their libraries read at
# start or import: a child whose value differs from the server's must start afresh.
EAGER_PREFIXES = ("PYTHON", "LD_", "MALLOC", "GLIBC", "TORCH", "PYTORCH", "TRITON", "CUDA", "NCCL", "NVIDIA",
                  "CUBLAS", "CUDNN", "OMP_", "GOMP", "KMP_", "MKL", "OPENBLAS", "NUMPY", "NPY_", "HIP", "ROCM",
                  "HSA_", "XLA", "KLADDER", "LANG", "LC_", "TZ")
# What the server imports before it serves: each machinery (run/modes/tracing.is_machinery), so
# that the import-tracing child records what a fresh process records. (Triton imports its gluon
# package at a kernel's first call: 50 modules, 1.4 of a first call's 3.6 s on the CPU.)
PRELOAD = ("numpy", "torch", "triton", "triton.experimental.gluon", "kladder.run.worker", "kladder.run.trial", "kladder.gen.load",
           "kladder.core.fingerprint", "kladder.run.interpreter", "kladder.run.modes.jitcache",
           "kladder.run.modes.envset", "kladder.run.modes.imports")

ADDRESS: str | None = None      # in a worker: the climb's server's socket (set with each point's request)
_FRESH_WARNINGS: list = []      # in the server: the warning filters it started with, before its preload's "ignore"


class ServerLost(RuntimeError):
    """A forked process ended after its server did: its exit status is lost with the server."""


def incompatible(base: dict, env: dict) -> str | None:
    """Why a child with `env` cannot be forked from a server started with `base` (None: it can)."""
    for k in sorted(set(base) | set(env)):
        if base.get(k) != env.get(k) and k not in LAZY_VARS and k.startswith(EAGER_PREFIXES):
            return f"{k} differs from the server's"
    return None


# ---------------------------------------------------------------------------- the client side
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
        msg = json.loads(self._buf.partition(b"\n")[0])
        self.returncode, self.cpu_s = int(msg["exit"]), float(msg.get("cpu_s", 0.0))
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
            self.conn.sendall(b"kill\n")
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
    """`python ARGV` (ARGV: ['-m', module, args...]) forked from the server at `address` (default:
    ADDRESS), with exactly `env`, stdin/stdout/stderr `fds`, and `pass_fds` {variable: fd}: each
    fd passed, its number in the child put in that variable; in `cwd` (default: this process's).
    None where the server cannot serve it (gone, refused, or no pid within `wait_s`): start it
    afresh then."""
    address = address or ADDRESS
    if not address or len(argv) < 2 or argv[0] != "-m":
        return None
    names = list(pass_fds or {})
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(wait_s)
        conn.connect(address)
        req = json.dumps({"argv": argv[1:], "env": env, "cwd": os.fspath(cwd or os.getcwd()),
                          "fd_env": names}).encode() + b"\n"
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
    msg = json.loads(line)
    if "pid" not in msg:
        conn.close()
        return None
    child = Forked(conn, int(msg["pid"]))
    child._buf = rest
    return child


def run(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout), the child
    forked from the climb's server where it can be (cmd: [sys.executable, '-m', module, ...]).
    A timeout kills the child (subprocess.TimeoutExpired, as subprocess.run raises it); a child
    whose server died under it is run again afresh. `run.cpu_s` adds up the forked children's
    CPU seconds (the worker reports them: they are the point's own work, not other load)."""
    if cmd and cmd[0] == sys.executable and ADDRESS:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as null:
            child = spawn(cmd[1:], env, (null.fileno(), out.fileno(), err.fileno()))
            if child is not None:
                try:
                    code = child.wait(timeout)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                    raise subprocess.TimeoutExpired(cmd, timeout) from None
                if not child.lost:
                    CPU.s += child.cpu_s
                    out.seek(0)
                    err.seek(0)
                    return subprocess.CompletedProcess(cmd, code, out.read().decode(errors="replace"),
                                                       err.read().decode(errors="replace"))
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


class _Cpu:
    s = 0.0


CPU = _Cpu()


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
                    self._ready = line.strip() == b"ready"
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


# ---------------------------------------------------------------------------- the server
def _cuda_on() -> bool:
    """torch initialized CUDA in this process: a fork of it would share a CUDA state (never
    expected: nothing the server imports touches torch.cuda; this refuses rather than forks)."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 - a torch without CUDA support
        return False


def _stdio() -> None:
    """New sys.stdin/stdout/stderr on fds 0-2, made as the interpreter makes them at its start
    (line-buffered on a terminal, stderr always; write-through under PYTHONUNBUFFERED)."""
    import io
    unbuffered = bool(getattr(sys.__stdout__, "write_through", False))     # -u, PYTHONUNBUFFERED (as the server started)

    def make(fd: int, like, write: bool):
        raw = io.FileIO(fd, "wb" if write else "rb", closefd=False)
        line = write and (raw.isatty() or fd == 2)
        buf = raw if (write and unbuffered) else (io.BufferedWriter(raw) if write else io.BufferedReader(raw))
        return io.TextIOWrapper(buf, encoding=getattr(like, "encoding", None), errors=getattr(like, "errors", None),
                                line_buffering=line, write_through=write and unbuffered)
    sys.stdin = sys.__stdin__ = make(0, sys.__stdin__, False)
    sys.stdout = sys.__stdout__ = make(1, sys.__stdout__, True)
    sys.stderr = sys.__stderr__ = make(2, sys.__stderr__, True)


def _become(req: dict, fds: list[int], close: list[int], env_delta: dict, env_gone: list[str]) -> None:
    """In the forked child: become `python -m MODULE ARGS` started afresh; never returns."""
    code = 1
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.set_wakeup_fd(-1)
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        for target, fd in zip((0, 1, 2), fds[:3], strict=True):
            os.dup2(fd, target)
        extra = {}
        for name, fd in zip(req["fd_env"], fds[3:], strict=True):
            os.set_inheritable(fd, True)
            extra[name] = str(fd)
        for fd in fds[:3]:
            if fd > 2 and fd not in fds[3:]:
                os.close(fd)
        env = {**req["env"], **extra}
        for k, v in env_delta.items():               # what the preloaded modules set at their import
            if k not in req["env"]:
                env[k] = v
        for k in env_gone:
            env.pop(k, None)
        os.environ.clear()
        os.environ.update(env)
        import warnings
        warnings.resetwarnings()                 # not the preload's "ignore": warnings show as a fresh process's do
        warnings.filters[:] = _FRESH_WARNINGS    # (the reset told the registries; nothing warned in between)
        cwd = req["cwd"]
        if sys.path and sys.path[0] == os.getcwd():
            sys.path[0] = cwd
        os.chdir(cwd)
        _stdio()
        import runpy
        import types
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        module, args = req["argv"][0], req["argv"][1:]
        sys.argv = ["-m", *args]
        try:
            runpy._run_module_as_main(module, alter_argv=True)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - as the interpreter does with an uncaught exception
            import traceback
            traceback.print_exc()
            code = 1
        with contextlib.suppress(BaseException):
            import atexit
            atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - the fork could not become the process: said on its stderr
        import traceback
        with contextlib.suppress(BaseException):
            os.write(2, ("kladder fork server: " + traceback.format_exc()).encode())
        code = 1
    finally:
        for f in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                f.flush()
        os._exit(code & 0xFF if code >= 0 else 1)


def _preload(names, base: dict, delta: dict, gone: list) -> tuple[dict, list]:
    """Import `names`; what they set in os.environ is noted (a child gets it as its own import
    would set it) and taken back, so that the server's environment stays the one it started with."""
    import importlib
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    delta = {**delta, **{k: v for k, v in os.environ.items() if base.get(k) != v}}
    gone = [*gone, *(k for k in base if k not in os.environ)]
    os.environ.clear()
    os.environ.update(base)
    return delta, gone


def serve(address: str) -> int:
    """`python -m kladder.run.forkserver SOCKET [LABEL]`: preload, print 'ready', serve until
    stdin closes. Workers and the modes' own processes fork from it alike: a worker no longer
    imports anything at its start that a mode's process does not (until 2026-12-07 a second
    server, forked from this one, had Inductor's config imported for the workers: run/settings.py)."""
    base = dict(os.environ)
    import warnings
    _FRESH_WARNINGS.extend(warnings.filters)     # a child's, as a new interpreter has them (-W, PYTHONWARNINGS)
    warnings.filterwarnings("ignore")
    preloading = threading.Event()
    preloading.set()
    threading.Thread(target=_lifeline_while, args=(preloading,), daemon=True).start()
    env_delta, env_gone = _preload(PRELOAD, base, {}, [])
    preloading.clear()                           # from here the loop watches stdin (and kills its children first)
    sys.stdout.flush()
    return _loop(address, base, env_delta, env_gone)


def _lifeline_while(preloading: threading.Event) -> None:
    """The climb went away (stdin closed) while the server still imports torch and Triton
    (seconds, more on a loaded host): exit at once, with no child yet to kill, rather than
    outlive the climb until the imports end. Once the loop runs, stdin is the loop's."""
    with contextlib.suppress(OSError):
        while os.read(0, 1024):
            pass
    if preloading.is_set():
        os._exit(0)


def _loop(address: str, base: dict, env_delta: dict, env_gone: list) -> int:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(0, selectors.EVENT_READ, "stdin")
    sel.register(wake_r, selectors.EVENT_READ, "child")
    children: dict[int, socket.socket] = {}       # pid -> its requester's connection
    by_conn: dict[socket.socket, int] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()

    def kill(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    def reap() -> None:
        while children:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = children.pop(pid, None)
            if conn is None:
                continue
            by_conn.pop(conn, None)
            with contextlib.suppress(OSError):
                sel.unregister(conn)
            msg = {"exit": os.waitstatus_to_exitcode(status), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(msg).encode() + b"\n")
            conn.close()

    def fork(conn: socket.socket) -> None:
        conn.settimeout(30)
        try:
            data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 16)
            while not data.endswith(b"\n"):
                more = conn.recv(1 << 20)
                if not more:
                    raise ConnectionError
                data += more
            req = json.loads(data)
        except (OSError, ValueError, ConnectionError):
            conn.close()
            return
        why = incompatible(base, req["env"]) or ("CUDA is initialized in the server" if _cuda_on() else None)
        if why or len(fds) != 3 + len(req["fd_env"]):
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"refused": why or "descriptors"}).encode() + b"\n")
            conn.close()
            return
        sys.stdout.flush()
        sys.stderr.flush()
        own = [listener.fileno(), wake_r, wake_w, sel.fileno(), conn.fileno(), *(c.fileno() for c in by_conn)]
        pid = os.fork()
        if pid == 0:
            _become(req, fds, own, env_delta, env_gone)
        for fd in fds:
            os.close(fd)
        children[pid] = conn
        by_conn[conn] = pid
        conn.settimeout(None)
        try:
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:
            kill(pid)
        sel.register(conn, selectors.EVENT_READ, "conn")

    try:
        while True:
            for key, _ in sel.select():
                what = key.data
                if what == "accept":
                    with contextlib.suppress(OSError):
                        conn, _ = listener.accept()
                        fork(conn)
                elif what == "stdin":
                    if not os.read(0, 1024):
                        return 0
                elif what == "child":
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                    reap()
                else:                               # a requester wrote "kill" or went away
                    conn = key.fileobj
                    pid = by_conn.get(conn)
                    try:
                        data = conn.recv(64)
                    except OSError:
                        data = b""
                    if pid is not None and (not data or b"kill" in data):
                        kill(pid)
                    if not data:
                        with contextlib.suppress(OSError):
                            sel.unregister(conn)
            reap()
    finally:
        for pid in list(children):
            kill(pid)
        with contextlib.suppress(OSError):
            os.unlink(address)


if __name__ == "__main__":
    status = serve(sys.argv[1])
    os._exit(status)                      # no interpreter teardown (torch's and Triton's exit hooks) to wait for
