"""A hang is the kernel's only when the kernel had the CPU (run/faults.py starved, under_load).
Starved: the worker runnable but waiting for a CPU most of the time (/proc schedstat's run-queue
delay). On the 2-core machine, with other work holding both cores, the zoo's twins nan_blind and
rmsnorm_n_tail failed `r1-M=4096-N=1-bfloat16` as a hang twice, under load and "alone" (alone
among the climb's own workers): their worker got ~15 s of CPU in 120 s while other processes
used 225 s of the 240 (docs/results/2026-12-02-cpu-zoo-session7). Measured alone on an idle
host the kernel needs ~18 s."""
import os
import subprocess
import sys

from kladder.core.facts import HostBusyFacts
from kladder.core.outcome import Check, Load, NoteKind, Status
from kladder.core.point import Point
from kladder.report.words.notes import note_text
from kladder.run import faults
from kladder.run.isolation import HostSample

P = Point("s", 1, (("M", 4096), ("N", 1)))
CORES = os.cpu_count() or 1


def _hang():
    return faults.hang(P, 120.0)


def test_a_hang_alone_too_while_others_held_the_host_and_the_worker_starved_is_not_judged():
    starved = Load(host_cpu_s=0.94 * CORES * 120, worker_cpu_s=15.0, worker_wait_s=104.0, seconds=120.0)
    out = faults.under_load(_hang(), _hang(), Load(host_cpu_s=200.0, seconds=120.0), starved)
    assert out.status == Status.NOT_JUDGED and out.note.kind == NoteKind.HOST_BUSY
    assert isinstance(out.note.facts, HostBusyFacts) and out.note.facts.worker_cpu_s == 15.0
    text = note_text(out.note)
    assert "the host was busy" in text and "ran 15.0 s and waited 104.0 s for a CPU in 120.0 s" in text and "not the kernel's hang" in text


def test_a_hang_whose_worker_had_its_core_stays_failed_however_busy_the_host():
    spinning = Load(host_cpu_s=0.94 * CORES * 120, worker_cpu_s=118.0, worker_wait_s=1.5, seconds=120.0)
    out = faults.under_load(_hang(), _hang(), Load(host_cpu_s=200.0, seconds=120.0), spinning)
    assert out.status == Status.FAILED and out.headline.check == Check.HANG


def test_a_blocked_hang_stays_failed_however_busy_the_host():
    # a kernel blocked for good (sleeping, waiting on a flag) waits on no run queue: on the H200's
    # busy host, tests/specs/faulty.py's sleeping N = 7 was NOT JUDGED by a rule of CPU shares alone
    idle = Load(host_cpu_s=0.9 * CORES * 120, worker_cpu_s=0.1, worker_wait_s=0.2, seconds=120.0)
    out = faults.under_load(_hang(), _hang(), Load(host_cpu_s=200.0, seconds=120.0), idle)
    assert out.status == Status.FAILED and out.headline.check == Check.HANG
    assert faults.under_load(_hang(), _hang(), Load(host_cpu_s=200.0, seconds=120.0)).status == Status.FAILED


def test_the_host_sample_counts_the_workers_own_cpu_apart_from_others():
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                             "while time.process_time() - t < 0.3: pass\nprint('spun', flush=True)\ntime.sleep(60)"],
                            stdout=subprocess.PIPE)
    try:
        sample = HostSample(spin.pid)
        assert spin.stdout.readline().strip() == b"spun"       # however long the spinning took the host
        load = sample.end()                   # read while the worker lives, as at a hang
    finally:
        spin.kill()
        spin.wait()
    assert 0.25 <= load.worker_cpu_s <= load.seconds + 0.05
    assert 0 <= load.worker_wait_s <= load.seconds + 0.05
