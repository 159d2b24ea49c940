"""run/sampling.py on fake /proc files and fake device answers: what counts as a busy host, the
readings of /proc (stat, meminfo, vmstat, status, schedstat), HostSample's arithmetic over a
point, PeakMemory's per-stage peaks, and device_load's split of the device's processes into the
climb's and others'."""
import io
import os

import pytest

from kladder.core.outcome import Load
from kladder.run import devicestart, sampling
from kladder.run.sampling import HostSample, PeakMemory

GIB = 1 << 30
TCK = os.sysconf("SC_CLK_TCK")


class FakeProc:
    """`open` for the module: paths -> text (a missing one raises OSError, as /proc does);
    writes are recorded."""

    def __init__(self, files: dict):
        self.files, self.written = files, []

    def __call__(self, path, mode="r", *a, **k):
        if "w" in mode:
            buf = io.StringIO()
            buf.close = lambda: self.written.append((path, buf.getvalue()))
            return buf
        if path not in self.files:
            raise FileNotFoundError(path)
        text = self.files[path]
        return io.BytesIO(text.encode()) if "b" in mode else io.StringIO(text)


@pytest.fixture
def proc(monkeypatch):
    fake = FakeProc({})
    monkeypatch.setattr(sampling, "open", fake, raising=False)
    return fake


# ---------------------------------------------------------------------------- busy
@pytest.mark.parametrize("load, busy", [
    (Load(), False),
    (Load(lanes=1), True),
    (Load(processes=1), True),
    (Load(oom_kills=1), True),
    (Load(host_cpu_s=2.5, seconds=10.0), False),          # exactly a quarter of a core: not past it
    (Load(host_cpu_s=2.51, seconds=10.0), True),
    (Load(host_cpu_s=0.001, seconds=0.0), True),          # no wall time measured: any other CPU is busy
])
def test_busy_is_another_lane_process_memory_holder_or_a_quarter_core_of_others(load, busy):
    assert sampling.busy(load) is busy


# ---------------------------------------------------------------------------- /proc readings
def test_host_busy_seconds_leave_out_idle_and_iowait(proc):
    proc.files["/proc/stat"] = "cpu  100 20 30 5000 700 6 7 8 9 10\ncpu0 1 2 3\n"
    assert sampling._host_busy_s() == pytest.approx((100 + 20 + 30 + 6 + 7 + 8) / TCK)
    del proc.files["/proc/stat"]
    assert sampling._host_busy_s() is None


def test_a_processs_cpu_reads_past_a_name_with_spaces_and_brackets(proc):
    fields = ["S"] + ["0"] * 10 + ["11", "22", "33", "44"] + ["0"] * 5
    proc.files["/proc/42/stat"] = "42 (my (odd) name) " + " ".join(fields)
    assert sampling._process_cpu_s(42) == pytest.approx((11 + 22 + 33 + 44) / TCK)
    assert sampling._process_cpu_s(43) == 0.0                     # gone


def test_waited_sums_every_threads_run_queue_delay_and_skips_what_cannot_be_read(proc, monkeypatch):
    monkeypatch.setattr(sampling.os, "listdir", lambda p: ["1", "2", "3"] if p == "/proc/9/task" else os.listdir(p))
    proc.files["/proc/9/task/1/schedstat"] = "100 2000000000 5\n"
    proc.files["/proc/9/task/2/schedstat"] = "100 500000000 5\n"
    proc.files["/proc/9/task/3/schedstat"] = "garbage\n"            # no second field: skipped
    assert sampling._waited_s(9) == 2.5
    monkeypatch.setattr(sampling.os, "listdir", lambda p: (_ for _ in ()).throw(FileNotFoundError(p)))
    assert sampling._waited_s(9) == 0.0


def test_host_memory_is_total_less_available_in_bytes_or_nothing_when_a_field_is_missing(proc):
    proc.files["/proc/meminfo"] = "MemTotal:  1000 kB\nMemFree:  10 kB\nMemAvailable:  250 kB\n"
    assert sampling.host_memory() == (750 * 1024, 1000 * 1024)
    assert sampling.host_available() == 250 * 1024
    proc.files["/proc/meminfo"] = "MemTotal:  1000 kB\n"
    assert sampling.host_memory() == (None, None) and sampling.host_available() is None
    proc.files["/proc/meminfo"] = "MemTotal:  lots kB\nMemAvailable: 1 kB\n"
    assert sampling.host_memory() == (None, None)


def test_oom_kills_reads_vmstat_or_none_where_it_is_not_kept(proc):
    proc.files["/proc/vmstat"] = "nr_free_pages 5\noom_kill_x 9\noom_kill 3\n"
    assert sampling.oom_kills() == 3
    proc.files["/proc/vmstat"] = "nr_free_pages 5\n"
    assert sampling.oom_kills() is None
    del proc.files["/proc/vmstat"]
    assert sampling.oom_kills() is None


def test_status_bytes_reads_only_the_keys_asked(proc):
    proc.files["/proc/self/status"] = "Name: python\nVmHWM:   2048 kB\nVmRSS:   1024 kB\n"
    assert sampling._status_bytes("VmRSS") == {"VmRSS": 1024 * 1024}
    assert sampling._status_bytes("VmRSS", "VmHWM", "VmSwap") == {"VmRSS": 1 << 20, "VmHWM": 2 << 20}


# ---------------------------------------------------------------------------- HostSample
class Script:
    """Each call returns the next value of its list."""

    def __init__(self, *values):
        self.values = list(values)

    def __call__(self, *a):
        return self.values.pop(0)


def _sample(monkeypatch, host, ours, worker, waited, kills, used_total, clock=(10.0, 14.0)):
    monkeypatch.setattr(sampling, "_host_busy_s", Script(*host))
    monkeypatch.setattr(sampling, "_ours_s", Script(*ours))
    monkeypatch.setattr(sampling, "_process_cpu_s", Script(*worker))
    monkeypatch.setattr(sampling, "_waited_s", Script(*waited))
    monkeypatch.setattr(sampling, "oom_kills", Script(*kills))
    monkeypatch.setattr(sampling, "host_memory", lambda: used_total)
    monkeypatch.setattr(sampling.time, "monotonic", Script(*clock))
    return HostSample(1234)


def test_others_cpu_is_the_hosts_less_ours_with_the_forked_childrens_counted_as_ours(monkeypatch):
    s = _sample(monkeypatch, host=(100.0, 110.0), ours=(50.0, 53.0), worker=(5.0, 7.0), waited=(1.0, 1.25),
                kills=(4, 6), used_total=(5 * GIB, 10 * GIB))
    load = s.end(children_s=1.5)
    assert load.host_cpu_s == 5.5 and load.worker_cpu_s == 3.5 and load.worker_wait_s == 0.25
    assert load.seconds == 4.0 and load.oom_kills == 2
    assert load.host_used_bytes is None and load.host_total_bytes is None     # not full: not kept


def test_a_full_host_is_kept_and_negative_differences_are_zero(monkeypatch):
    s = _sample(monkeypatch, host=(100.0, 101.0), ours=(50.0, 60.0), worker=(5.0, 4.0), waited=(2.0, 1.0),
                kills=(6, 3), used_total=(9 * GIB, 10 * GIB))
    load = s.end()
    assert (load.host_cpu_s, load.worker_cpu_s, load.worker_wait_s, load.oom_kills) == (0.0, 0.0, 0.0, 0)
    assert (load.host_used_bytes, load.host_total_bytes) == (9 * GIB, 10 * GIB)       # 90 %: full


def test_off_linux_others_cpu_and_kills_are_unknown(monkeypatch):
    s = _sample(monkeypatch, host=(None, None), ours=(1.0, 2.0), worker=(0.0, 0.0), waited=(0.0, 0.0),
                kills=(None, 5), used_total=(None, None))
    load = s.end()
    assert load.host_cpu_s == 0.0 and load.oom_kills is None and load.host_used_bytes is None


# ---------------------------------------------------------------------------- PeakMemory
def test_each_stage_gets_its_peak_above_the_points_start_and_a_stage_again_keeps_the_larger(proc):
    status = "/proc/self/status"
    proc.files[status] = "VmRSS: 1000 kB\nVmHWM: 1000 kB\n"
    peak = PeakMemory("cpu")
    peak.begin()
    peak.stage("inputs")
    proc.files[status] = "VmRSS: 1000 kB\nVmHWM: 1500 kB\n"
    peak.stage("kernel")
    proc.files[status] = "VmRSS: 1000 kB\nVmHWM: 1100 kB\n"
    peak.stage("inputs")
    proc.files[status] = "VmRSS: 1000 kB\nVmHWM: 900 kB\n"               # below the start: 0, never negative
    assert peak.end() == {"inputs": [500 * 1024, None], "kernel": [100 * 1024, None], }
    assert ("/proc/self/clear_refs", "5") in proc.written               # the peak reset at each boundary


def test_a_new_point_forgets_the_last_ones_stages(proc):
    proc.files["/proc/self/status"] = "VmRSS: 10 kB\nVmHWM: 20 kB\n"
    peak = PeakMemory("cpu")
    peak.begin()
    peak.stage("checks")
    assert peak.end() == {"checks": [10 * 1024, None]}
    peak.begin()
    assert peak.end() == {}


# ---------------------------------------------------------------------------- device_load
def test_the_climbs_workers_are_left_out_and_others_memory_summed(monkeypatch):
    monkeypatch.setattr(sampling, "_nvml", lambda gpu: ([(10, 3 * GIB), (11, GIB), (99, 2 * GIB)], 6 * GIB, 80 * GIB))
    assert sampling.device_load("0", [10, 11]) == {"processes": 1, "device_used_bytes": 2 * GIB,
                                                   "device_total_bytes": 80 * GIB}
    assert sampling.device_load("0", [10, 11, 99]) == {"processes": 0, "device_used_bytes": 0,
                                                       "device_total_bytes": 80 * GIB}


def test_in_a_container_foreign_pids_count_as_many_ours_and_the_rest_hold_the_whole_use(monkeypatch):
    monkeypatch.setattr(sampling, "_nvml", lambda gpu: ([(7001, GIB), (7002, GIB), (7003, GIB)], 5 * GIB, 80 * GIB))
    assert sampling.device_load(None, [10]) == {"processes": 2, "device_used_bytes": 5 * GIB,
                                                "device_total_bytes": 80 * GIB}
    assert sampling.device_load(None, [10, 11, 12]) == {"processes": 0, "device_used_bytes": 0,
                                                        "device_total_bytes": 80 * GIB}


def test_without_nvml_or_nvidia_smi_nothing_is_known(monkeypatch):
    monkeypatch.setattr(sampling, "_nvml", lambda gpu: None)
    monkeypatch.setattr(sampling, "_nvidia_smi", lambda gpu: None)
    assert sampling.device_load("0", [1]) == {"processes": 0, "device_used_bytes": None, "device_total_bytes": None}


def test_nvidia_smis_holders_become_apps_and_used_is_total_less_free(monkeypatch):
    state = {"free_bytes": 30 * GIB, "total_bytes": 80 * GIB,
             "holders": [{"pid": 5, "name": "py", "used_bytes": None}, {"pid": None, "name": "?", "used_bytes": GIB},
                         {"pid": 6, "name": "py", "used_bytes": 4 * GIB}]}
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: state)
    assert sampling._nvidia_smi("0") == ([(5, 0), (6, 4 * GIB)], 50 * GIB, 80 * GIB)
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: {**state, "holders": None})
    assert sampling._nvidia_smi("0") is None


@pytest.mark.parametrize("gpu, env, index", [("2", "5,6", "2"), (None, "5,6", "5"), ("", "GPU-ab,GPU-cd", "GPU-ab"),
                                             (None, None, "0"), (None, "", "0")])
def test_the_device_asked_is_the_one_given_else_the_first_visible(monkeypatch, gpu, env, index):
    if env is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", env)
    assert sampling._index(gpu) == index
