"""The false-alarm suite: correct ops that torch ships, each with the spec its author would
write (tests/specs/torch_ops.py), climbed at rungs 1-3 on the CPU under several seeds. A
correct kernel must pass every point at the defaults: a single failure, or a bias warning on
a correct op's rounding, is a false alarm (false alarms are seed-dependent: `--seed`). The
same suite runs on the H200 at rungs 1-4 (docs/results/2026-12-01-h200-round/h200_trust.sh, docs/results/)."""
import os

import pytest

from kladder.climbing.ladder import rung_points
from kladder.report.terminal import render_outcome
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET, is_big

from specs.torch_ops import SPECS

# rung 1's ~30 points a spec under three seeds, rungs 2-3's ~120 under two: ~5,400 points in ~35 s
# of CPU on the 2-core machine (2 min wall under a load of 9). Every seed at every rung:
# KLADDER_FALSE_ALARM_SEEDS=0,1,2,3,4,5 (measured: 14,886 points, none failed, none warned:
# docs/results/2026-12-01-cpu-trust)
SEEDS = tuple(int(s) for s in os.environ.get("KLADDER_FALSE_ALARM_SEEDS", "0,1,2").split(","))
RUNGS = (1, 2, 3)


def climb_in_process(spec, seeds=SEEDS, rungs=RUNGS, upper_seeds: int = 2):
    """Every CPU point of `rungs` under every seed (rungs 2-3 under the first `upper_seeds`), in
    this process, as a worker runs them."""
    outcomes = []
    for i, seed in enumerate(seeds):
        for rung in rungs:
            if rung > 1 and i >= upper_seeds and os.environ.get("KLADDER_FALSE_ALARM_SEEDS") is None:
                continue
            for p in rung_points(spec, rung, CPU_BUDGET, seed):
                if p.needs == "cuda" or is_big(spec, p.sizes):
                    continue                    # a GPU point: the climb skips it here
                outcomes.append(run_point(spec, p, "cpu").outcome)
    return outcomes


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def onednn_reads_a_sliced_rows_gap(dtype_name: str, linear=None) -> bool:
    """Whether torch's CPU GEMM on this machine reads past a row of a sliced A into its gap:
    oneDNN's AMX brgemm (extendable_k) reads A's K rounded up to its tile while striding rows by
    the leading dimension, and relies on B's zero padding to cancel the extra columns, which NaN
    in the gap defeats (NaN * 0 = NaN). Fixed upstream in oneDNN after v3.14
    (uxlfoundation/oneDNN#5603, "fix extendable_k with padded src leading dimension", and #5717 /
    #5723, the K-tail NaN leak into other M tiles); torch 2.13 ships oneDNN v3.12. Seen by this
    suite on CI's machine (2026-12-02): rows 0..15 of a 17 x 17 bfloat16 F.linear NaN, row 16
    (the last M tile, which oneDNN zero-pads) right. On a CPU without AMX the probe is False."""
    import torch
    import torch.nn.functional as F
    dt = getattr(torch, dtype_name)
    m = n = k = 17
    g = torch.Generator().manual_seed(0)
    wide = torch.full((m, k + 16), float("nan"), dtype=dt)
    wide[:, :k] = torch.randn(m, k, generator=g).to(dt)
    w = torch.randn(n, k, generator=g).to(dt)
    return bool((linear or F.linear)(wide[:, :k], w).isnan().any())


def torch_defect(name, o) -> bool:
    """A failed point of a torch op that is torch's own known defect on this machine (kladder
    right, the op wrong), not a false alarm: linear on a sliced low-precision input where the
    probe above shows oneDNN using the gap, and the finding is exactly that (non-finite output
    from finite inputs)."""
    if name != "linear" or "sliced" not in dict(o.point.layouts).values():
        return False
    dtypes = set(dict(o.point.dtypes).values())
    if not dtypes or not all(onednn_reads_a_sliced_rows_gap(d) for d in dtypes):
        return False
    from kladder.report.terminal import render_outcome as r
    return "non-finite where the reference is finite" in r(o)


def test_the_onednn_probe_sees_a_gap_read_when_one_happens():
    """The probe can say yes: a GEMM that reads each row rounded up to 32 columns through the
    row stride, against zero-padded weights (extendable_k's way), is caught; an honest one is not."""
    import torch.nn.functional as F

    def extendable_k(x, w):
        a = x.as_strided((x.shape[0], 32), (x.stride(0), 1))   # the row and the next 15 of its gap
        return a @ F.pad(w, (0, 32 - w.shape[1])).T
    assert onednn_reads_a_sliced_rows_gap("bfloat16", linear=extendable_k)
    assert not onednn_reads_a_sliced_rows_gap("bfloat16", linear=lambda x, w: (x.float() @ w.float().T).to(x.dtype))


@pytest.mark.parametrize("name", list(SPECS))
def test_a_correct_torch_op_passes_every_point_of_rungs_1_to_3(name):
    outcomes = climb_in_process(SPECS[name])
    wrong = [o for o in outcomes if o.status not in ("passed", "skipped")]
    known = [o for o in wrong if torch_defect(name, o)]
    if known:       # kladder is right about these; every other failure is still a false alarm
        print(f"{len(known)} points of {name}: torch's known oneDNN gap read on this CPU: "
              + ", ".join(o.point.id for o in known[:4]))
    wrong = [o for o in wrong if all(o is not k for k in known)]
    assert not wrong, f"{len(wrong)} of {len(outcomes)} points:\n" + "\n".join(render_outcome(o) for o in wrong[:3])
    warned = [o for o in outcomes if o.warnings]
    assert not warned, f"{len(warned)} bias warnings on a correct op: {warned[0].point.id}: {warned[0].warnings[0].facts}"
    assert sum(o.status == "passed" for o in outcomes) > 0.9 * len(outcomes)


# The false alarms issue 15 measured on the old budget (a fixed rtol and a +-2^-20 sensitivity of
# 3 draws), each replayed at its own point and seeds: layer_norm float32 at N = 2 failed 4 of 20
# seeds at M = 4096; linear float32 at K = 16384, 57 of 64; a float16 RoPE, 21 of 1,000.
MEASURED = {
    "layer_norm": ((("M", 4096), ("N", 2)), (("x", "float32"),), 20),
    "linear": ((("M", 32), ("N", 32), ("K", 16384)), (("x", "float32"),), 64),
    "rope": ((("S", 16), ("H", 4), ("D", 64)), (("q", "float16"),), 1000),
}


@pytest.mark.parametrize("name", list(MEASURED))
def test_the_false_alarms_measured_on_the_old_budget_pass(name):
    from kladder.core.point import Point
    dims, dtypes, seeds = MEASURED[name]
    spec = SPECS[name]
    wrong = []
    for seed in range(1, seeds + 1):
        o = run_point(spec, Point(spec.name, 1, dims, dtypes, seed=seed), "cpu").outcome
        if o.status != "passed":
            wrong.append(o)
    assert not wrong, f"{len(wrong)} of {seeds} seeds:\n" + render_outcome(wrong[0])
