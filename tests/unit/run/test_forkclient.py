"""run/forkclient.py in-process: a Forked child's end read from its connection (a socketpair in
place of the server), spawn's conversation with a server played by a thread here (the request,
the descriptors, Spawned / Refused), run's use of a forked child (output, CPU seconds, timeout,
a lost server) with spawn faked, and the server's first line. No process is started; the
server process itself (Server) is tests/test_forkserver.py's."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import types

import pytest

from kladder.run import forkclient
from kladder.run.forkclient import Attached, Children, Forked, _says_ready, spawn
from kladder.run.protocol import Exited, Kill, ProtocolError, Refused, ServerReady, Spawn, Spawned, from_wire, to_wire


@pytest.fixture
def killpg(monkeypatch):
    calls = []
    monkeypatch.setattr(forkclient.os, "killpg", lambda pid, sig: calls.append((pid, sig)))
    return calls


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    for s in (a, b):
        s.close()


# ---------------------------------------------------------------------------- Forked
def test_a_forked_childs_exit_and_cpu_seconds_come_from_its_exited_message_even_in_pieces(pair, killpg):
    ours, server = pair
    child = Forked(ours, 4242)
    assert child.poll() is None and child.returncode is None
    line = to_wire(Exited(exit=3, cpu_s=1.25)).encode()
    server.sendall(line[:5])
    assert child.poll() is None
    server.sendall(line[5:])
    assert child.wait(timeout=5) == 3 and child.cpu_s == 1.25 and not child.lost
    assert child.poll() == 3 and killpg == []
    child.kill()                                       # its end is known: nothing to kill
    assert killpg == []


def test_waiting_past_the_timeout_raises_as_popen_does(pair):
    child = Forked(pair[0], 4242)
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.01)


def test_a_server_gone_before_the_exit_loses_the_status_and_kills_the_group(pair, killpg):
    ours, server = pair
    child = Forked(ours, 4242)
    server.close()
    assert child.wait() == -signal.SIGKILL and child.lost
    assert killpg == [(4242, signal.SIGKILL)]


def test_kill_asks_the_server_and_falls_back_to_the_group_when_it_cannot(pair, killpg):
    ours, server = pair
    child = Forked(ours, 4242)
    child.kill()
    assert isinstance(from_wire(server.recv(4096).partition(b"\n")[0], Kill), Kill) and killpg == []
    ours.close()
    child.kill()
    assert killpg == [(4242, signal.SIGKILL)]


def test_an_exit_already_buffered_by_spawn_is_read_without_the_connection(pair):
    child = Forked(pair[0], 7)
    child._buf = to_wire(Exited(exit=0)).encode()
    assert child.poll() == 0


# ---------------------------------------------------------------------------- spawn
@pytest.fixture
def address():
    d = tempfile.mkdtemp(prefix="klfc-")                 # a short path: AF_UNIX takes 108 bytes
    yield os.path.join(d, "s")
    shutil.rmtree(d, ignore_errors=True)


def _serve(address, answer):
    """A one-request server on a thread: what it received goes to `got`, it sends `answer`
    (bytes) or closes the connection (None)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(1)
    got = {}

    def run():
        conn, _ = listener.accept()
        msg, fds, _, _ = socket.recv_fds(conn, 65536, 16)
        got["request"], got["fds"] = from_wire(msg.partition(b"\n")[0], Spawn), fds
        for fd in fds:
            os.close(fd)
        if answer is not None:
            conn.sendall(answer)
        else:
            conn.close()
        got["conn"] = conn
        listener.close()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return got, t


def test_spawn_sends_the_request_with_its_descriptors_and_reads_spawned(address, tmp_path):
    answer = (to_wire(Spawned(pid=4242)) + to_wire(Exited(exit=5, cpu_s=0.5))).encode()
    got, t = _serve(address, answer)
    r, w = os.pipe()
    try:
        child = spawn(["-m", "mod", "a1"], {"K": "V"}, (r, w, w), {"LIFELINE": r}, address=address, cwd=str(tmp_path))
        t.join(5)
        assert child.pid == 4242 and child.wait(5) == 5 and child.cpu_s == 0.5
        req = got["request"]
        assert req.argv == ["mod", "a1"] and req.env == {"K": "V"} and req.cwd == str(tmp_path)
        assert req.fd_env == ["LIFELINE"] and len(got["fds"]) == 4
    finally:
        os.close(r)
        os.close(w)


def test_a_refusal_means_start_it_afresh_but_a_bad_message_is_kladders_bug(address):
    got, t = _serve(address, to_wire(Refused("CUDA_X differs")).encode())
    assert spawn(["-m", "mod"], {}, (0, 1, 2), address=address) is None
    t.join(5)
    os.unlink(address)
    got, t = _serve(address, to_wire(Refused("no spawn", bad_message=True)).encode())
    with pytest.raises(ProtocolError, match="no message: no spawn"):
        spawn(["-m", "mod"], {}, (0, 1, 2), address=address)
    t.join(5)


def test_a_server_that_hangs_up_or_is_not_there_is_none(address):
    got, t = _serve(address, None)
    assert spawn(["-m", "mod"], {}, (0, 1, 2), address=address) is None
    t.join(5)
    assert spawn(["-m", "mod"], {}, (0, 1, 2), address=address + "-none") is None


@pytest.mark.parametrize("argv, address", [(["-m", "mod"], None), (["-m", "mod"], ""), (["-c", "x"], "/x"),
                                           (["-m"], "/x")])
def test_what_a_server_cannot_serve_is_none_without_asking(argv, address, monkeypatch):
    monkeypatch.setattr(forkclient.socket, "socket", lambda *a: pytest.fail("asked a server"))
    assert spawn(argv, {}, (0, 1, 2), address=address) is None


# ---------------------------------------------------------------------------- run
class FakeChild:
    def __init__(self, fds, code=0, cpu_s=0.0, lost=False, hang=False):
        os.write(fds[1], b"out\xff")
        os.write(fds[2], b"err")
        self.code, self.cpu_s, self.lost, self.hang, self.killed = code, cpu_s, lost, hang, False

    def wait(self, timeout=None):
        if self.hang and not self.killed:
            raise subprocess.TimeoutExpired("x", timeout)
        return self.code

    def kill(self):
        self.killed = True


def _fake_spawn(monkeypatch, **kw):
    made = []

    def fake(argv, env, fds, pass_fds=None, address=None, **k):
        made.append((argv, address))
        made.append(FakeChild(fds, **kw))
        return made[-1]
    monkeypatch.setattr(forkclient, "spawn", fake)
    plain = []
    monkeypatch.setattr(forkclient.subprocess, "run", lambda cmd, **k: plain.append(cmd) or "afresh")
    return made, plain


def test_run_forks_where_it_can_and_adds_the_childs_cpu_seconds(monkeypatch):
    made, plain = _fake_spawn(monkeypatch, code=4, cpu_s=2.0)
    children = Children(ref="spec.py", forkserver="/sock", cpu_s=1.0)
    done = forkclient.run([sys.executable, "-m", "mod", "x"], {}, 10, children)
    assert (done.returncode, done.stdout, done.stderr) == (4, "out\ufffd", "err")
    assert made[0] == (["-m", "mod", "x"], "/sock") and children.cpu_s == 3.0 and plain == []


def test_run_kills_a_forked_child_past_its_timeout_and_raises_with_the_command(monkeypatch):
    made, _ = _fake_spawn(monkeypatch, hang=True)
    cmd = [sys.executable, "-m", "mod"]
    with pytest.raises(subprocess.TimeoutExpired) as e:
        forkclient.run(cmd, {}, 3, Children(forkserver="/sock"))
    assert made[1].killed and e.value.cmd == cmd and e.value.timeout == 3


def test_run_starts_afresh_a_child_whose_server_was_lost_and_counts_nothing(monkeypatch):
    made, plain = _fake_spawn(monkeypatch, lost=True, cpu_s=9.0)
    children = Children(forkserver="/sock")
    assert forkclient.run([sys.executable, "-m", "mod"], {}, 3, children) == "afresh"
    assert children.cpu_s == 0.0 and plain == [[sys.executable, "-m", "mod"]]


@pytest.mark.parametrize("cmd, children", [(["/bin/other", "-m", "mod"], Children(forkserver="/sock")),
                                           ([sys.executable, "-m", "mod"], Children()),
                                           ([sys.executable, "-m", "mod"], None)])
def test_run_without_a_server_or_for_another_program_starts_it_afresh(monkeypatch, cmd, children):
    made, plain = _fake_spawn(monkeypatch)
    assert forkclient.run(cmd, {}, 3, children) == "afresh" and made == [] and plain == [cmd]


# ---------------------------------------------------------------------------- the server's first line, Attached
def test_the_server_serves_only_when_its_first_line_is_ready():
    assert _says_ready(to_wire(ServerReady()).encode())
    assert not _says_ready(b"")                                    # it died while importing
    assert not _says_ready(b"a module printed this\n")
    assert not _says_ready(to_wire(Kill()).encode())


def test_an_attached_server_serves_while_its_socket_exists(tmp_path):
    a = Attached(str(tmp_path / "s"))
    assert not a.ready() and not a.serves({})
    (tmp_path / "s").write_text("")
    assert a.ready() and a.serves({"ANY": "env"})
    a.close()
    assert (tmp_path / "s").exists()                               # not its to remove


def test_children_default_to_nothing_to_hand_down():
    c = Children()
    assert (c.ref, c.forkserver, c.cpu_s) == (None, None, 0.0)


# ---------------------------------------------------------------------------- Server's side, its process faked
class ServerProc:
    """What Server uses of its Popen: stdout the read end of a real pipe, stdin, poll, wait."""

    def __init__(self, slow=False):
        r, self.w = os.pipe()
        self.stdout = os.fdopen(r, "rb")
        self.stdin = types.SimpleNamespace(closed=False)
        self.stdin.close = lambda: setattr(self.stdin, "closed", True)
        self.pid, self.code, self.slow, self.waits = 4343, None, slow, []

    def say(self, data: bytes):
        os.write(self.w, data)

    def poll(self):
        return self.code

    def wait(self, timeout=None):
        self.waits.append(timeout)
        if self.slow and timeout is not None:
            raise subprocess.TimeoutExpired("server", timeout)
        self.code = 0
        return 0


@pytest.fixture
def server(tmp_path):
    s = forkclient.Server.__new__(forkclient.Server)      # its __init__ starts the process: not here
    s.dir, s.address = str(tmp_path / "d"), str(tmp_path / "d" / "s")
    os.mkdir(s.dir)
    s.env, s._ready, s._ended, s._lock = {"TORCH_X": "1", "CUDA_VISIBLE_DEVICES": "0"}, False, False, threading.Lock()
    s.proc = ServerProc()
    yield s
    os.close(s.proc.w)
    s.proc.stdout.close()


def test_a_server_serves_once_its_first_line_says_ready(server):
    assert not server.ready()
    server.proc.say(to_wire(ServerReady()).encode())
    assert server.ready() and server.ready()
    assert server.serves({"TORCH_X": "1", "CUDA_VISIBLE_DEVICES": "3"})    # a variable read lazily may differ
    assert not server.serves({"TORCH_X": "2", "CUDA_VISIBLE_DEVICES": "0"})


def test_a_server_whose_first_line_is_anything_else_never_serves(server):
    server.proc.say(b"a module printed this\n")
    assert not server.ready()
    server.proc.say(to_wire(ServerReady()).encode())
    assert not server.ready() and server._ended


def test_a_dead_server_does_not_serve_even_after_ready(server):
    server.proc.say(to_wire(ServerReady()).encode())
    server.proc.code = -9
    assert not server.ready()


def test_ready_waits_up_to_its_time_for_the_line(server):
    threading.Timer(0.05, server.proc.say, [to_wire(ServerReady()).encode()]).start()
    assert server.ready(wait_s=5.0)


def test_closing_a_server_that_does_not_exit_kills_its_group_and_removes_its_socket(server, killpg):
    open(server.address, "w").close()
    server.proc.slow = True
    server.close()
    assert server.proc.stdin.closed and killpg == [(4343, signal.SIGKILL)] and server.proc.waits == [5, None]
    assert not os.path.exists(server.dir)
