"""run/devicestart.py without a device: the retry loop's arithmetic on a fake clock (no sleep),
its stop and its error filter, the DeviceStartError's first line and facts, and the parsing of
nvidia-smi's CSV (the device chosen by index, UUID or UUID prefix; holders by UUID)."""
import json
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from kladder.run import devicestart
from kladder.run.devicestart import MIB, DeviceStartError, retrying

GPUS = [["0", "GPU-aaaa-1111", "1024", "81920"], ["1", "GPU-bbbb-2222", "512", "81920"], ["bad row"]]
APPS = [["GPU-aaaa-1111", "41", "python", "2048"], ["GPU-bbbb-2222", "42", "trainer", "[N/A]"],
        ["GPU-aaaa-1111", "[N/A]", "ghost", "10"], ["short"]]


class Clock:
    def __init__(self):
        self.t = 0.0
        self.slept = []

    def monotonic(self):
        return self.t

    def sleep(self, s, stop):
        self.slept.append(s)
        self.t += s


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(devicestart.time, "monotonic", c.monotonic)
    monkeypatch.setattr(devicestart, "_sleep", c.sleep)
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: {"free_bytes": None, "total_bytes": None,
                                                                       "holders": None})
    return c


OOM = RuntimeError("CUDA error: out of memory")


def _failing(n, error=OOM, value=7):
    calls = []

    def call():
        calls.append(1)
        if len(calls) <= n:
            raise error
        return value
    return call, calls


def test_a_call_that_succeeds_is_not_retried(clock):
    call, calls = _failing(0)
    assert retrying("x", call, budget_s=10, step_s=1) == 7 and len(calls) == 1 and clock.slept == []


def test_tries_go_on_while_another_step_fits_in_the_budget(clock):
    call, calls = _failing(100)
    with pytest.raises(DeviceStartError) as e:
        retrying("mem_get_info", call, gpu="1", budget_s=10.0, step_s=3.0)
    # tries at 0, 3, 6; at 9 another step (12 > 10) does not fit: the error after the 4th try
    assert len(calls) == 4 and clock.slept == [3.0, 3.0, 3.0]
    assert e.value.waited_s == 9.0 and e.value.what == "mem_get_info" and e.value.gpu == "1"
    assert e.value.error == "RuntimeError: CUDA error: out of memory"


def test_stop_ends_the_wait_at_the_first_failure(clock):
    call, calls = _failing(100)
    with pytest.raises(DeviceStartError):
        retrying("x", call, budget_s=100, step_s=1, stop=lambda: True)
    assert len(calls) == 1 and clock.slept == []


def test_an_error_not_listed_is_not_the_devices_and_goes_through(clock):
    call, calls = _failing(1, error=KeyError("spec"))
    with pytest.raises(KeyError):
        retrying("x", call, budget_s=100, step_s=1, errors=(RuntimeError,))
    assert len(calls) == 1


def test_a_device_start_error_from_the_call_keeps_its_own_words(clock):
    call, _ = _failing(100, error=DeviceStartError("inner", "context refused\nmore lines"))
    with pytest.raises(DeviceStartError) as e:
        retrying("outer", call, budget_s=1, step_s=1, errors=(DeviceStartError,))
    assert e.value.what == "outer" and e.value.error == "context refused"


def test_the_errors_first_line_is_kept_and_its_facts_are_strict_json(monkeypatch):
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: {"free_bytes": MIB, "total_bytes": 2 * MIB,
                                                                       "holders": []})
    e = DeviceStartError("start", "\n  first words\nsecond\n", gpu="0", waited_s=12.345)
    assert e.error == "first words" and str(e) == "start: first words"
    assert e.facts == {"kind": "device", "what": "start", "error": "first words", "waited_s": 12.3, "gpu": "0",
                       "free_bytes": MIB, "total_bytes": 2 * MIB, "holders": []}
    json.dumps(e.facts, allow_nan=False)
    assert DeviceStartError("w", "   ").error == ""


# ---------------------------------------------------------------------------- nvidia-smi
@pytest.fixture
def smi(monkeypatch):
    answers = {"--query-gpu=index,uuid,memory.free,memory.total": GPUS,
               "--query-compute-apps=gpu_uuid,pid,process_name,used_memory": APPS}
    monkeypatch.setattr(devicestart.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(devicestart, "_smi", lambda path, query: answers[query])
    return answers


@pytest.mark.parametrize("gpu", ["0", "GPU-aaaa-1111", "GPU-aaaa"])
def test_the_device_is_chosen_by_index_uuid_or_uuid_prefix_and_its_holders_by_uuid(smi, gpu):
    state = devicestart.device_state(gpu)
    assert state["free_bytes"] == 1024 * MIB and state["total_bytes"] == 81920 * MIB
    assert state["holders"] == [{"pid": 41, "name": "python", "used_bytes": 2048 * MIB},
                                {"pid": None, "name": "ghost", "used_bytes": 10 * MIB}]


def test_all_devices_are_summed_when_none_is_named(smi):
    state = devicestart.device_state(None)
    assert state["free_bytes"] == 1536 * MIB and state["total_bytes"] == 2 * 81920 * MIB
    assert [h["pid"] for h in state["holders"]] == [41, 42, None]
    assert state["holders"][1]["used_bytes"] is None                     # [N/A]


def test_an_unknown_device_no_smi_or_no_answer_is_all_unknown(smi, monkeypatch):
    unknown = {"free_bytes": None, "total_bytes": None, "holders": None}
    assert devicestart.device_state("7") == unknown
    smi["--query-compute-apps=gpu_uuid,pid,process_name,used_memory"] = None
    assert devicestart.device_state("0") == {"free_bytes": 1024 * MIB, "total_bytes": 81920 * MIB, "holders": None}
    smi["--query-gpu=index,uuid,memory.free,memory.total"] = None
    assert devicestart.device_state("0") == unknown
    monkeypatch.setattr(devicestart.shutil, "which", lambda name: None)
    assert devicestart.device_state("0") == unknown


def test_smis_csv_is_split_and_stripped_and_a_failure_is_none(monkeypatch):
    out = "0, GPU-a, 100, 200\n\n1, GPU-b , 5, 6\n"
    monkeypatch.setattr(devicestart.subprocess, "run",
                        lambda argv, **k: subprocess.CompletedProcess(argv, 0, out, ""))
    assert devicestart._smi("smi", "--q") == [["0", "GPU-a", "100", "200"], ["1", "GPU-b", "5", "6"]]
    monkeypatch.setattr(devicestart.subprocess, "run", lambda argv, **k: subprocess.CompletedProcess(argv, 9, out, ""))
    assert devicestart._smi("smi", "--q") is None

    def timeout(argv, **k):
        raise subprocess.TimeoutExpired(argv, 10)
    monkeypatch.setattr(devicestart.subprocess, "run", timeout)
    assert devicestart._smi("smi", "--q") is None


@pytest.mark.parametrize("text, value", [("1", MIB), ("0.5", MIB // 2), ("[N/A]", None), ("", None)])
def test_mib_reads_numbers_and_refuses_words(text, value):
    assert devicestart._mib(text) == value


@settings(max_examples=50, deadline=None)
@given(budget=st.integers(0, 60), step=st.integers(1, 20))
def test_a_device_that_never_answers_is_tried_once_a_step_while_a_step_fits(budget, step):
    t = {"now": 0.0}
    calls = []

    def call():
        calls.append(t["now"])
        raise RuntimeError("busy")

    def sleep(s, stop):
        t["now"] += s
    with pytest.MonkeyPatch.context() as m:
        m.setattr(devicestart.time, "monotonic", lambda: t["now"])
        m.setattr(devicestart, "_sleep", sleep)
        m.setattr(devicestart, "device_state", lambda gpu=None: {})
        with pytest.raises(DeviceStartError) as e:
            retrying("x", call, budget_s=float(budget), step_s=float(step))
    assert calls == [k * step for k in range(budget // step + 1)]
    assert e.value.waited_s == (budget // step) * step <= budget
