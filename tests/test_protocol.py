"""The messages between kladder's processes (run/protocol.py): every kind goes to the wire and
comes back equal, and a line that is no message the reader takes there (an unknown kind, one
it does not expect, a field missing or unknown, no JSON) raises ProtocolError, never dropped."""
import json

import pytest

from kladder.core.outcome import Outcome, Stage, Status
from kladder.core.point import Point
from kladder.run import protocol
from kladder.run.protocol import (
    Answer,
    Exited,
    Hello,
    Kill,
    ProtocolError,
    Refused,
    Run,
    ServerReady,
    Spawn,
    Spawned,
    StageBegan,
    StartFailed,
    from_wire,
    to_wire,
)

POINT = Point("copy", 1, (("N", 8),))

SAMPLES = [
    Run(POINT, "/tmp/kladder-fork-x/s"),
    Run(POINT),
    Hello("cpu"),
    Hello("NVIDIA H100", free_bytes=80 * 2**30, fingerprint={"torch": "2.13.0"}),
    StartFailed("ImportError: no module named kernels"),
    StartFailed("RuntimeError: CUDA error: out of memory", device_error=True),
    StageBegan(Stage.KERNEL),
    Answer(Outcome(POINT, Status.PASSED, seconds=0.25), fatal=False, children_cpu_s=1.5, peak={"kernel": [4096, None]}),
    Answer(Outcome(POINT, Status.FAILED), fatal=True),
    Spawn(["kladder.run.worker", "x.py::spec", "cpu"], {"PATH": "/bin"}, "/work", ["KLADDER_LIFELINE"]),
    Kill(),
    Spawned(1234),
    Refused("LD_PRELOAD differs from the server's"),
    Refused("unknown message kind 'spawnn'", bad_message=True),
    Exited(-9, 0.5),
    ServerReady(),
]


def test_every_kind_has_a_sample_here():
    assert {type(m) for m in SAMPLES} == set(protocol.KINDS.values())


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda m: m.kind)
def test_each_message_goes_to_the_wire_and_comes_back_equal(msg):
    line = to_wire(msg)
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line)["kind"] == msg.kind
    for back in (from_wire(line.encode(), type(msg)), from_wire(line)):     # bytes or text, expected or any kind
        assert type(back) is type(msg) and to_wire(back) == line
        if isinstance(msg, Answer):                # the outcome as its JSON says it (Outcome.from_dict)
            assert back.outcome.to_dict() == msg.outcome.to_dict() and back.outcome.status == msg.outcome.status
            assert (back.fatal, back.children_cpu_s, back.peak) == (msg.fatal, msg.children_cpu_s, msg.peak)
        else:
            assert back == msg


def test_an_unknown_kind_is_refused_naming_it():
    with pytest.raises(ProtocolError, match="unknown message kind 'stagee'"):
        from_wire('{"kind": "stagee", "stage": "kernel"}')
    with pytest.raises(ProtocolError, match="unknown message kind None"):
        from_wire('{"stage": "kernel"}')               # the old keyed form: told apart by its keys no more


def test_a_kind_the_reader_does_not_take_there_is_refused():
    with pytest.raises(ProtocolError, match="a hello message where stage or answer was expected"):
        from_wire(to_wire(Hello("cpu")), StageBegan, Answer)


@pytest.mark.parametrize("line", ['{"kind": "spawned"}', '{"kind": "spawned", "pid": 3, "extra": 1}',
                                  '{"kind": "stage", "stage": "nap"}', "ready", "", "[1, 2]"])
def test_a_malformed_line_is_refused(line):
    with pytest.raises(ProtocolError):
        from_wire(line)


def test_a_kind_is_registered_once():
    with pytest.raises(TypeError, match="kind"):
        class Again(protocol.Message):          # made to see it refused
            kind = "hello"


def test_the_parent_refuses_a_worker_line_that_is_no_message_it_expects_there():
    """Both ends read through from_wire: the parent's watchdog (workers.Worker._read) raises on a
    line of the old keyed form and on a kind it does not take while a point runs."""
    import os
    import types

    from kladder.run.workers import Worker
    r, w = os.pipe()
    os.write(w, b'{"stage": "kernel"}\n' + to_wire(Hello("cpu")).encode() + to_wire(StageBegan(Stage.CHECKS)).encode())
    os.close(w)
    worker = Worker.__new__(Worker)
    worker.proc, worker._buf = types.SimpleNamespace(stdout=os.fdopen(r, "rb"), wait=lambda: None), b""
    try:
        with pytest.raises(ProtocolError, match="unknown message kind None"):
            worker._read(30, StageBegan, Answer)
        with pytest.raises(ProtocolError, match="a hello message where stage or answer was expected"):
            worker._read(30, StageBegan, Answer)
        assert worker._read(30, StageBegan, Answer) == StageBegan(Stage.CHECKS)
        assert worker._read(30, StageBegan, Answer) is None          # the pipe ended
    finally:
        worker.proc.stdout.close()
