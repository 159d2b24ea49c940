"""The warm fork server, its server's side (`python -m kladder.run.forkserver SOCKET LABEL`; the
climb's side, which starts it and asks it for children, is run/forkclient.py): the climb's new Python processes (a fresh worker for an A-B-A point, a
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
LD_PRELOAD say), where the server is gone or never started, forkclient.spawn returns None and the
caller starts the process as before (subprocess): silently correct, only slower.

Protocol (run/protocol.py's messages): ServerReady on its stdout once it serves; then one
Unix-socket connection per child. The client sends Spawn with its descriptors (stdin, stdout,
stderr, then the passed ones) attached; the server answers Spawned (or Refused), then Exited when
the child ended. The client sending Kill or closing the connection kills the child's group. The
server ends, killing every child it forked, when its stdin closes (the climb is gone)."""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import sys
import threading

from .reaper import kill_with_group

# Variables read only when used, never at import: they may differ between the server and a child.
LAZY_VARS = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_VISIBLE_DEVICES",
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

_FRESH_WARNINGS: list = []      # in the server: the warning filters it started with, before its preload's "ignore"


def incompatible(base: dict, env: dict) -> str | None:
    """Why a child with `env` cannot be forked from a server started with `base` (None: it can).
    PYTHONPATH may differ by entries in front of the server's (path_extra): the child puts them in
    front of its sys.path, as a new process would have them (the server checks, at the request,
    that they hold nothing it imported or that a new Python runs at its start: shadowing)."""
    for k in sorted(set(base) | set(env)):
        if base.get(k) != env.get(k) and k not in LAZY_VARS and k.startswith(EAGER_PREFIXES):
            if k == "PYTHONPATH" and path_extra(base.get(k), env.get(k)) is not None:
                continue
            return f"{k} differs from the server's"
    return None


def path_extra(base: str | None, child: str | None) -> list[str] | None:
    """The entries a child's PYTHONPATH puts in front of the server's: the rest of it must be the
    server's, in its order. None where it is not so, or where an added entry is empty (the working
    folder, which a new process resolves at its start)."""
    have = base.split(os.pathsep) if base else []
    want = child.split(os.pathsep) if child else []
    n = len(want) - len(have)
    if n < 0 or want[n:] != have or "" in want[:n]:
        return None
    return want[:n]


# What a new Python imports at its start from its sys.path, before any module runs (site.py): a
# fork, whose interpreter started long ago, would not.
AT_START = ("sitecustomize", "usercustomize")


def shadowing(extra: list[str], cwd: str, loaded) -> str | None:
    """Why a child whose PYTHONPATH adds `extra` (relative to `cwd`) cannot be forked from a process
    that imported `loaded` (top-level names): an added entry that holds one of those names (the new
    process would import that one, the fork has the server's), or a module a new Python runs at its
    start. None: the added entries change nothing the fork already holds."""
    for entry in extra:
        folder = os.path.join(cwd, entry)
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return f"PYTHONPATH's {entry} is not a folder (an archive is read at import)"
            continue
        try:
            names = os.listdir(folder)
        except OSError as e:
            return f"PYTHONPATH's {entry} cannot be listed ({e.strerror})"
        for item in sorted(names):
            name = item.partition(".")[0]
            if not (os.path.isdir(os.path.join(folder, item)) or item.endswith((".py", ".pyc", ".so", ".pyd"))):
                continue
            if name in AT_START:
                return f"PYTHONPATH's {entry} holds {item}, which a new Python runs at its start"
            if name in loaded:
                return f"PYTHONPATH's {entry} holds {item}, and the server imported {name} from elsewhere"
    return None


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


def _become(req, fds: list[int], close: list[int], env_delta: dict, env_gone: list[str],
            front: list[str] = ()) -> None:
    """In the forked child: become `python -m MODULE ARGS` started afresh; never returns.
    `front`: the entries its PYTHONPATH puts in front of the server's (path_extra)."""
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
        for name, fd in zip(req.fd_env, fds[3:], strict=True):
            os.set_inheritable(fd, True)
            extra[name] = str(fd)
        for fd in fds[:3]:
            if fd > 2 and fd not in fds[3:]:
                os.close(fd)
        env = {**req.env, **extra}
        for k, v in env_delta.items():               # what the preloaded modules set at their import
            if k not in req.env:
                env[k] = v
        for k in env_gone:
            env.pop(k, None)
        os.environ.clear()
        os.environ.update(env)
        import warnings
        warnings.resetwarnings()                 # not the preload's "ignore": warnings show as a fresh process's do
        warnings.filters[:] = _FRESH_WARNINGS    # (the reset told the registries; nothing warned in between)
        cwd = req.cwd
        if sys.path and sys.path[0] == os.getcwd():
            sys.path[0] = cwd
        added = [os.path.abspath(os.path.join(cwd, e)) for e in front]
        for entry in reversed(added):            # in front of the server's entries, as a new process has them
            if entry in sys.path:
                sys.path.remove(entry)
            sys.path.insert(1, entry)
        if added:
            import importlib
            importlib.invalidate_caches()
        os.chdir(cwd)
        _stdio()
        import runpy
        import types
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        module, args = req.argv[0], req.argv[1:]
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
    from .protocol import Exited, Kill, ProtocolError, Refused, ServerReady, Spawn, Spawned, from_wire, to_wire
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
    sys.stdout.write(to_wire(ServerReady()))
    sys.stdout.flush()

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
            msg = Exited(os.waitstatus_to_exitcode(status), round(usage.ru_utime + usage.ru_stime, 3))
            with contextlib.suppress(OSError):
                conn.sendall(to_wire(msg).encode())
            conn.close()

    def wants_kill(data: bytes) -> bool:
        """What a requester sent once its child runs: Kill. Anything else is kladder's own bug:
        said on the server's stderr, and the child killed all the same (its requester is not
        speaking the protocol, and a child nobody can stop must not run on)."""
        for line in data.splitlines():
            try:
                from_wire(line, Kill)
            except ProtocolError as e:
                print(f"kladder fork server: {e}", file=sys.stderr, flush=True)
        return True

    def refuse(conn: socket.socket, fds: list[int], msg) -> None:
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            conn.sendall(to_wire(msg).encode())
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
        except (OSError, ConnectionError):
            conn.close()
            return
        try:
            req = from_wire(data, Spawn)
        except ProtocolError as e:                # kladder's own bug: said to the client, which raises it
            refuse(conn, fds, Refused(str(e), bad_message=True))
            return
        why = incompatible(base, req.env) or ("CUDA is initialized in the server" if _cuda_on() else None)
        extra = [] if why else path_extra(base.get("PYTHONPATH"), req.env.get("PYTHONPATH")) or []
        if extra:
            why = shadowing(extra, req.cwd, {name.partition(".")[0] for name in list(sys.modules)})
        if why or len(fds) != 3 + len(req.fd_env):
            refuse(conn, fds, Refused(why or "descriptors"))
            return
        sys.stdout.flush()
        sys.stderr.flush()
        own = [listener.fileno(), wake_r, wake_w, sel.fileno(), conn.fileno(), *(c.fileno() for c in by_conn)]
        pid = os.fork()
        if pid == 0:
            _become(req, fds, own, env_delta, env_gone, extra)
        for fd in fds:
            os.close(fd)
        children[pid] = conn
        by_conn[conn] = pid
        conn.settimeout(None)
        try:
            conn.sendall(to_wire(Spawned(pid)).encode())
        except OSError:
            kill_with_group(pid)
        sel.register(conn, selectors.EVENT_READ, "conn")

    def event(key) -> bool:
        """One event handled; False once stdin closed (the server ends)."""
        what = key.data
        if what == "accept":
            with contextlib.suppress(OSError):
                conn, _ = listener.accept()
                try:
                    fork(conn)
                except Exception:
                    with contextlib.suppress(OSError):
                        conn.close()
                    raise
        elif what == "stdin":
            return bool(os.read(0, 1024))
        elif what == "child":
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            reap()
        else:                                   # a requester sent Kill or went away
            conn = key.fileobj
            pid = by_conn.get(conn)
            try:
                data = conn.recv(64)
            except OSError:
                data = b""
            if pid is not None and (not data or wants_kill(data)):
                kill_with_group(pid)
            if not data:
                with contextlib.suppress(OSError):
                    sel.unregister(conn)
        return True

    try:
        while True:
            for key, _ in sel.select():
                try:
                    if not event(key):
                        return 0
                except Exception as e:          # noqa: BLE001 - kladder's own bug: said, and the server serves on
                    # (until 2026-12-07 an exception here ended the server silently, and every climb
                    # attached to it started its processes afresh from then on, or lost its children)
                    with contextlib.suppress(Exception):
                        print(f"kladder fork server: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            reap()
    finally:
        for pid in list(children):
            kill_with_group(pid)
        with contextlib.suppress(OSError):
            os.unlink(address)


if __name__ == "__main__":
    status = serve(sys.argv[1])
    os._exit(status)                      # no interpreter teardown (torch's and Triton's exit hooks) to wait for
