"""run/timeouts.py: the one timeout rule and what is added on top of it (a model point, the
modes' own processes, kladder's own stages), as arithmetic on a spec, a device and a point."""
import types

import pytest

from kladder.core.point import Point
from kladder.run import timeouts

NONE = types.SimpleNamespace(timeout_s=None)
SPEC30 = types.SimpleNamespace(timeout_s=30.0)
EAGER = Point("s", 1, (("N", 4),))
MODEL = Point("s", 8, (("N", 4),), kind="model", mode="model")


@pytest.mark.parametrize("spec, given, want", [(NONE, None, 120.0), (SPEC30, None, 30.0), (SPEC30, 7.0, 7.0),
                                               (NONE, 0.5, 0.5), (SPEC30, 0, 30.0)])
def test_the_users_timeout_wins_then_the_specs_then_the_devices(spec, given, want):
    assert timeouts.point_timeout(spec, "cpu", given) == want
    assert timeouts.point_timeout(spec, "cpu", given, EAGER) == want


def test_a_model_point_gets_five_times_the_timeout_whatever_gave_it():
    assert timeouts.point_timeout(NONE, "cuda", None, MODEL) == 600.0
    assert timeouts.point_timeout(SPEC30, "cpu", 2.0, MODEL) == 2.0 * timeouts.MODEL_TIMEOUT_FACTOR == 10.0


def test_an_unknown_device_has_no_default():
    with pytest.raises(KeyError):
        timeouts.point_timeout(NONE, "mps")
    assert timeouts.point_timeout(SPEC30, "mps") == 30.0     # a spec's own timeout needs no default


def test_a_child_process_gets_three_point_timeouts_never_a_model_points():
    assert timeouts.child_timeout(SPEC30, "cpu") == 90.0
    assert timeouts.child_timeout(NONE, "cuda") == 360.0


@pytest.mark.parametrize("mode, children", [("eager", 0), ("dispatch", 1), ("jitcache", 2), ("flags", 3)])
def test_the_worker_waits_the_points_timeout_and_each_child_processs_on_top(mode, children):
    p = Point("s", 7 if children else 1, (("N", 4),), mode=mode)
    assert timeouts.worker_timeout(SPEC30, "cpu", p) == 30.0 + children * 90.0
    # --timeout shortens the point's share, not the children's (their start-up is not a hang)
    assert timeouts.worker_timeout(SPEC30, "cpu", p, given=1.0) == 1.0 + children * 90.0


def test_kladders_own_stage_gets_five_point_timeouts_a_model_points_included():
    assert timeouts.stage_budget(SPEC30, "cpu", EAGER) == 150.0
    assert timeouts.stage_budget(NONE, "cpu", MODEL, given=4.0) == 5 * 20.0
