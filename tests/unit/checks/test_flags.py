"""checks/flags.py: what a call ran as code, how it was compared, and the verdict on a flag whose
values all ran the same code (both sides: one that changed the code passes)."""
import json

from kladder.checks.flags import code_of, how, no_effect
from kladder.core.outcome import Check, Finding, Note, NoteKind
from kladder.run.modes.base import Flagged, Ran


def _launch(name, code=None, how="source", **params):
    return {"name": name, "params": params, "code": code or name, "how": how, "asm": {}}


def _ran(*launches, gpu=()):
    return Ran(list(launches), list(gpu))


def test_code_of_is_the_distinct_codes_and_gpu_kernels_sorted():
    ran = _ran(_launch("b", code="c2"), _launch("a", code="c1"), _launch("a", code="c1"), gpu=["k2", "k1", "k2"])
    assert code_of(ran) == (("c1", "c2"), ("k1", "k2"))
    assert code_of(_ran()) == ((), ())
    # the order of the launches does not change the code
    assert code_of(_ran(_launch("a", code="c1"), _launch("b", code="c2"))) == code_of(
        _ran(_launch("b", code="c2"), _launch("a", code="c1")))


def test_how_prefers_binary_then_source_then_names():
    src, binary = _ran(_launch("a")), _ran(_launch("a", how="binary"))
    assert how([(0, src), (1, binary)]) == "binary"
    assert how([(0, src), (1, src)]) == "source"
    assert how([(0, _ran(gpu=["k"])), (1, _ran())]) == "names"          # no launches: only names compared


def test_values_that_ran_different_code_pass_with_a_note_counting_the_codes():
    flagged = Flagged("FAST", [(False, _ran(_launch("k", code="c0"))), (True, _ran(_launch("k", code="c1")))])
    f, note = no_effect(flagged)
    assert f is None
    assert note.kind == NoteKind.FLAG_CHANGED and note.facts.codes == 2 and note.facts.values == [False, True]
    assert note.facts.how == "source" and note.facts.set is None


def test_a_gpu_kernel_alone_is_a_change_of_code():
    flagged = Flagged("FAST", [(0, _ran(_launch("k"), gpu=["a"])), (1, _ran(_launch("k"), gpu=["b"]))])
    assert no_effect(flagged)[0] is None


def test_values_that_all_ran_the_same_code_fail_naming_what_each_ran():
    launches = [_launch(f"k{i}", code="same", BLOCK=i) for i in range(6)]
    runs = [(v, _ran(*launches, gpu=[f"g{i}" for i in range(6)])) for v in ("0", "1", "2")]
    f, note = no_effect(Flagged("$LIB_FAST", runs, variable="LIB_FAST"))
    assert f.check == Check.FLAG_NO_EFFECT and note.facts.codes == 1
    assert f.facts.flag == "$LIB_FAST" and f.facts.values == ["0", "1", "2"] and f.facts.variable == "LIB_FAST"
    assert [r["value"] for r in f.facts.runs] == ["0", "1", "2"]
    first = f.facts.runs[0]
    assert "started" not in first                                        # set at start: no 'started'
    assert [x["name"] for x in first["launches"]] == ["k0", "k1", "k2", "k3"]    # the first four of each
    assert first["launches"][2] == {"name": "k2", "params": {"BLOCK": 2}} and first["gpu"] == ["g0", "g1", "g2", "g3"]
    assert f.facts.set is None


def test_a_flag_set_after_import_says_what_each_process_started_with():
    runs = [(None, _ran(_launch("k"))), ("1", _ran(_launch("k")))]
    f, note = no_effect(Flagged("$X", runs, "after_import", ["0", None], "X"))
    assert f.facts.set == "after_import" and note.facts.set == "after_import"
    assert [r["started"] for r in f.facts.runs] == ["0", None]


def test_the_finding_and_note_round_trip_to_strict_json():
    runs = [(None, _ran(_launch("k"))), ("1", _ran(_launch("k")))]
    f, note = no_effect(Flagged("$X", runs, "after_import", [None, None], "X"))
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False))) == f
    assert Note.from_dict(json.loads(json.dumps(note.to_dict(), allow_nan=False))) == note
