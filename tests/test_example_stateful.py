"""examples/stateful/: a Triton row sum behind a ring of workspaces, its spec with kl.Calls. The
suite climbs rung 5 of the correct launcher (clean) and of the same launcher without its fix
(caught by the stream, at the first call after the ring wraps)."""
import os

import pytest

import kladder as kl

pytest.importorskip("triton")

SPEC = os.path.join(os.path.dirname(__file__), "..", "examples", "stateful", "ringsum_spec.py")


def _climb(name, tmp_path):
    return kl.climb(f"{SPEC}::{name}", rungs=5, device="cpu", log_path=str(tmp_path / "l.jsonl"))


def test_the_stateful_example_passes_rung_5_with_its_stream(tmp_path):
    rep = _climb("spec", tmp_path)
    assert not rep.failures, [o.point.id for o in rep.failures]
    stream = [o for o in rep.outcomes if o.point.mode == "calls"]
    assert len(stream) == 1 and stream[0].status == "passed"
    x = stream[0].note.facts
    assert (x.pattern, x.fresh, x.declared) == ("AABB", True, True)
    assert x.wrong == 0 and x.calls > 256          # past the ring's wrap (400 asked for, within 30 s)


def test_the_example_without_its_fix_is_caught_after_the_ring_wraps(tmp_path):
    rep = _climb("spec_forgets_to_zero", tmp_path)
    failed = [o for o in rep.outcomes if o.status == "failed"]
    assert [o.point.mode for o in failed] == ["calls"]           # rung 5's 100-call repeats never reach call 257
    f = failed[0].findings[0]
    assert f.check == "stream" and f.facts.first_wrong == 257
