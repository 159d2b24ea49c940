"""The false-alarm suite: correct ops that torch ships, each with the spec its author would
write (tests/specs/torch_ops.py), climbed at rungs 1-3 on the CPU under several seeds. A
correct kernel must pass every point at the defaults: a single failure, or a bias warning on
a correct op's rounding, is a false alarm (false alarms are seed-dependent: `--seed`). The
same suite runs on the H200 at rungs 1-4 (bench/h200_trust.sh, docs/results/)."""
import os

import pytest

from kladder.ladder import rung_points
from kladder.report.terminal import render_outcome
from kladder.run.trial import run_point
from kladder.sizes import CPU_BUDGET, is_big

from specs.torch_ops import SPECS

SEEDS = tuple(int(s) for s in os.environ.get("KLADDER_FALSE_ALARM_SEEDS", "0,1,2").split(","))
RUNGS = (1, 2, 3)


def climb_in_process(spec, seeds=SEEDS, rungs=RUNGS):
    """Every CPU point of `rungs` under every seed, in this process (as a worker runs them)."""
    outcomes = []
    for seed in seeds:
        for rung in rungs:
            for p in rung_points(spec, rung, CPU_BUDGET, seed):
                if p.needs == "cuda" or is_big(spec, p.sizes):
                    continue                    # a GPU point: the climb skips it here
                outcomes.append(run_point(spec, p, "cpu").outcome)
    return outcomes


@pytest.fixture(autouse=True)
def one_thread():
    """As kladder's CPU workers run points (run/worker.py): one intra-op thread."""
    import torch
    was = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(was)


@pytest.mark.parametrize("name", list(SPECS))
def test_a_correct_torch_op_passes_every_point_of_rungs_1_to_3(name):
    outcomes = climb_in_process(SPECS[name])
    wrong = [o for o in outcomes if o.status not in ("passed", "skipped")]
    assert not wrong, f"{len(wrong)} of {len(outcomes)} points:\n" + "\n".join(render_outcome(o) for o in wrong[:3])
    warned = [o for o in outcomes if o.warnings]
    assert not warned, f"{len(warned)} bias warnings on a correct op: {warned[0].point.id}: {warned[0].warnings[0].facts}"
    assert sum(o.status == "passed" for o in outcomes) > 0.9 * len(outcomes)
