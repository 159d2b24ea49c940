"""Memory budgets count what runs (issue 38, item 2): a worker measures each stage's peak (the
kernel's, the float64 reference's, the peer's) above what it held before the point; one point a
spec is measured and, scaled by the elements, sizes the points after it; a point the host cannot
hold is skipped with the estimate before any worker dies."""
import os

from kladder.climbing.ladder import Runner, skip_note
from kladder.gen.load import load_spec
from kladder.core.outcome import NoteKind, Status
from kladder.core.point import Point
from kladder.report.words import note_text
from kladder.run import isolation
from kladder.run.isolation import Lane, Pool
from kladder.core.sizes import MEASURE_MIN_BYTES, Peak, elements_of, peak_of

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "specs", "wide_reference.py")
MIB = 1 << 20


def _point(n: int) -> Point:
    return Point("wide_reference", 1, (("N", n),), (), f"N = {n}")


def test_a_worker_measures_the_references_peak_not_its_tensors():
    pool = Pool(SPEC, "cpu")
    lane = Lane(pool)
    try:
        lane.run(_point(16), 120.0)                        # a worker's first point pays its own first calls
        o = lane.run(_point(4096), 120.0)
    finally:
        lane.close()
        pool.close()
    assert o.status == Status.PASSED
    host = {s: v[0] for s, v in lane.peak.items()}
    assert host["reference"] >= 120 * MIB                  # the N x N float64 outer product: 128 MiB
    assert host["kernel"] < host["reference"] / 4          # the kernel: 2 x 4096 floats (and the allocator's slack)


def _peak(spec):
    # measured at N = 1M (8 MiB of tensors, a reference 8x that): 64 MiB a million elements
    return Peak("r1-N=1048576", elements_of(spec, {"N": 1 << 20}), host={"inputs": 8 * MIB, "kernel": 9 * MIB,
                                                                          "reference": 64 * MIB}, device={})


def test_a_point_the_host_cannot_hold_is_skipped_with_the_estimate():
    spec = load_spec(SPEC)
    peak = _peak(spec)
    note = skip_note(spec, _point(1 << 20), "cpu", None, peak, (1 << 30, 2))            # 512 MiB a worker: it fits
    assert note is None
    note = skip_note(spec, _point(1 << 20), "cpu", None, peak, (96 * MIB, 2))           # 48 MiB a worker: it does not
    assert note.kind == NoteKind.NO_HOST_MEMORY and note.facts.need_bytes == 64 * MIB and note.facts.workers == 2
    text = note_text(note)
    assert "needs about 64.00 MiB of the host's memory" in text and "measured at r1-N=1048576" in text
    assert "48.00 MiB available to each of its 2 workers" in text
    assert skip_note(spec, _point(1 << 20), "cpu", None, None, (96 * MIB, 2)) is None  # its tensors alone: 8 MiB


def test_on_cuda_the_kernels_part_must_fit_the_device_and_the_reference_moves_to_the_host():
    spec = load_spec(SPEC)
    peak = Peak("r1-N=1048576", elements_of(spec, {"N": 1 << 20}), host={"reference": 1 * MIB},
                device={"kernel": 10 * MIB, "reference": 64 * MIB})
    # 40 MiB free: the kernel fits, the reference does not beside it: it runs on the host, 65 MiB there
    note = skip_note(spec, _point(1 << 20), "cuda", 40 * MIB, peak, (32 * MIB, 1))
    assert note.kind == NoteKind.NO_HOST_MEMORY and note.facts.need_bytes == 65 * MIB
    note = skip_note(spec, _point(1 << 21), "cuda", 22 * MIB, peak, (1 << 34, 1))   # its tensors fit, its kernel does not
    assert note.kind == NoteKind.NO_DEVICE_MEMORY and note.facts.measured == "r1-N=1048576"
    assert "the peak of kernel, reference and peer measured at r1-N=1048576" in note_text(note)


def test_a_small_point_does_not_stand_for_the_others():
    spec = load_spec(SPEC)
    stages = {"kernel": [5 * MIB, None], "reference": [70 * MIB, None]}
    assert peak_of(spec, _point(16), stages) is None                       # 128 bytes of tensors
    n = MEASURE_MIN_BYTES // 8 + 1                                         # x and y, float32
    assert peak_of(spec, _point(n), stages).host["reference"] == 70 * MIB


def test_the_runner_skips_before_starting_a_worker(monkeypatch):
    spec = load_spec(SPEC)
    monkeypatch.setattr(isolation, "host_available", lambda: 32 * MIB)

    class NoPool:
        def lane(self):
            raise AssertionError("no worker may start for a point the host cannot hold")

        def close(self):
            pass
    runner = Runner(SPEC, spec, "cpu", pool=NoPool())
    runner.peak = _peak(spec)
    o = runner.run(_point(1 << 20))
    assert o.status == Status.SKIPPED and o.note.kind == NoteKind.NO_HOST_MEMORY


def test_a_big_point_keeps_its_own_economies():
    # with rows= a big point's reference runs on sampled rows and its inputs are hashed: a small
    # point's peak, scaled, would overstate it; its tensors' bytes decide, as before
    import kladder as kl
    spec = kl.Spec("rows", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 1 << 20), "N": kl.Dim(1, 8192)}, rows="M")
    sizes = {"M": 1 << 17, "N": 4096}                       # 2 GiB a tensor: a big point
    peak = Peak("r1-M=1024-N=4096", elements_of(spec, {"M": 1024, "N": 4096}), host={"reference": 400 * MIB},
                device={"kernel": 100 * MIB, "reference": 400 * MIB})
    big = Point("rows", 1, tuple(sizes.items()), (), "big", kind="big", needs="cuda")
    assert skip_note(spec, big, "cuda", 80 << 30, peak, (16 << 30, 1)) is None
