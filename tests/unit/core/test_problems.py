"""core/problems.py, directly: where_text (keys after KEYED parts, a nameless head), a Problem's
line, listed (one line, or a count and a line each), shown (classes by name, long values cut),
mean (case aside, cutoff), SpecError (the first problem's where/given/fix, pickling) and
call_problems / friendly on a small class of this module's own (typos, missing, positional)."""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import pytest

import kladder as kl
from kladder.core.errors import UsageError
from kladder.core.problems import Problem, SpecError, call_problems, friendly, listed, mean, shown, where_text


@pytest.mark.parametrize("where,text", [
    ((("Spec", "t"), "args", "x", "dtype"), "Spec('t').args['x'].dtype"),
    ((("Spec", "t"), "dims", "N", "min/max"), "Spec('t').dims['N'].min/max"),
    ((("Spec", "t"), "toolchain", "expect", 0, "when"), "Spec('t').toolchain.expect[0].when"),
    ((("Spec", "t"), "toolchain", "flags", "$FAST", "values"), "Spec('t').toolchain.flags['$FAST'].values"),
    ((("Spec", "t"), "args", "dims"), "Spec('t').args['dims']"),            # a key named like a KEYED part is a key
    ((("Spec", "t"), "args", "x", "dims", "N"), "Spec('t').args['x'].dims['N']"),
    ((("Spec", "t"), "configs", 0, "tolerance"), "Spec('t').configs.0.tolerance"),
    ((("kl.Tensor", None), "dtyp"), "kl.Tensor.dtyp"),
    ((("Spec", None),), "Spec"),
    ("already text", "already text"),
])
def test_where_text(where, text):
    assert where_text(where) == text


def test_where_text_escapes_control_characters_a_user_wrote():
    assert where_text((("kl.Spec", "t"), "\x1b[31mred")) == "kl.Spec('t').\\x1b[31mred"
    assert where_text((("Spec", "t"), "args", "\x1b")) == "Spec('t').args['\\x1b']"          # a key: repr'd already
    with pytest.raises(SpecError) as e:
        kl.Tensor("N", **{"\x1b]8;;http://x\x07": 1})
    assert "\x1b" not in str(e.value) and "\x07" not in str(e.value) and e.value.where == "kl.Tensor.\\x1b]8;;http://x\\x07"


def test_a_problem_is_one_line_where_got_fix():
    assert str(Problem((("Spec", "t"), "timeout_s"), -1, "give a number above 0.")) == \
        "Spec('t').timeout_s: got -1. give a number above 0."
    assert str(Problem("kl.Dim", kl.Dim, "call it.")) == "kl.Dim: got the class kl.Dim. call it."


def test_listed_one_problem_is_its_line_several_a_count_then_a_line_each():
    a = Problem((("Spec", "t"), "name"), 5, "fix a.")
    b = Problem((("Spec", "t"), "kernel"), "k", "fix b.")
    assert listed((a,)) == str(a)
    assert listed((a, b)) == f"2 problems in Spec('t'):\n  {a}\n  {b}"
    assert listed((Problem("free", 1, "x."), a)) == f"2 problems:\n  free: got 1. x.\n  {a}"


@pytest.mark.parametrize("v,text", [
    (kl.Tensor, "the class kl.Tensor"), (ValueError, "the class ValueError"), ("bf16", "'bf16'"), (None, "None"),
    ([1, 2], "[1, 2]"),
], ids=["tensor-class", "exception-class", "str", "none", "list"])
def test_shown(v, text):
    assert shown(v) == text


def test_shown_cuts_a_long_value_to_200_characters():
    text = shown("x" * 300)
    assert len(text) == 200 and text.endswith("...") and text.startswith("'xxx")
    assert shown("x" * 198) == repr("x" * 198)                  # 200 characters with its quotes: kept whole
    assert len(shown("x" * 199)) == 200 and shown("x" * 199).endswith("...")            # 201: cut


@pytest.mark.parametrize("given,names,cutoff,text", [
    ("n", ["M", "N"], 0.6, "did you mean 'N'? "),
    ("dimz", ["dims", "args"], 0.6, "did you mean 'dims'? "),
    ("zzz", ["dims", "args"], 0.6, ""),
    (3, ["N"], 0.6, ""),
    ("float33", ["float32", "float16"], 0.8, "did you mean 'float32'? "),
    ("flt", ["float32"], 0.8, ""),
    ("x", [1, None, "X"], 0.6, "did you mean 'X'? "),
    ("ab", ["AB", "ab"], 0.6, "did you mean 'AB'? "),                # case-equal names: the first listed
])
def test_mean(given, names, cutoff, text):
    assert mean(given, names, cutoff) == text


# ---------------------------------------------------------------------------- SpecError
def test_spec_error_holds_the_first_problems_where_given_and_fix():
    ps = (Problem((("Spec", "t"), "rows"), "R", "name dims."), Problem((("Spec", "t"), "name"), 1, "x."))
    e = SpecError("", problems=ps)
    assert (e.where, e.given, e.fix, e.problems) == ("Spec('t').rows", "R", "name dims.", ps)
    assert str(e) == listed(ps) and isinstance(e, UsageError) and isinstance(e, ValueError)


def test_spec_error_of_one_problem_made_from_its_parts():
    e = SpecError("kl.Thing.x", 3, "give 4.")
    assert e.problems == (Problem("kl.Thing.x", 3, "give 4."),) and str(e) == "kl.Thing.x: got 3. give 4."


def test_spec_error_pickles_with_every_problem():
    ps = (Problem((("Spec", "t"), "rows"), "R", "a."), Problem((("Spec", "t"), "name"), 1, "b."))
    back = pickle.loads(pickle.dumps(SpecError("", problems=ps)))
    assert back.problems == ps and str(back) == listed(ps) and back.where == "Spec('t').rows"


# ---------------------------------------------------------------------------- friendly classes
@friendly("kl.Thing", moved={"old": ("part", "kl.Part", "new", "7")})
@dataclass(frozen=True)
class Thing:
    size: int
    label: str = ""
    tags: tuple = field(default=())
    extra: int = field(default=0, kw_only=True)


def test_a_friendly_class_constructs_as_the_dataclass_does():
    assert Thing(1, "a", (2,), extra=3) == Thing(size=1, label="a", tags=(2,), extra=3)


def test_a_typo_names_the_field_and_does_not_also_say_it_is_missing():
    with pytest.raises(SpecError) as e:
        Thing(sise=1)
    assert [p.where for p in e.value.problems] == [(("kl.Thing", None), "sise")]
    assert e.value.fix == "kl.Thing has no field 'sise'; did you mean 'size'? its fields are size, label, tags, extra."


def test_a_missing_field_and_too_many_positionals():
    with pytest.raises(SpecError) as e:
        Thing()
    assert e.value.where == "kl.Thing.size" and e.value.fix == "kl.Thing needs size (its fields are size, label, tags, extra)."
    with pytest.raises(SpecError) as e:
        Thing(1, "a", (), 4)                                     # extra is keyword-only
    assert e.value.where == "kl.Thing" and e.value.given == (1, "a", (), 4)
    assert e.value.fix.startswith("kl.Thing takes at most 3 positional arguments")


def test_a_moved_field_says_where_it_went_with_the_value_given_when_short():
    with pytest.raises(SpecError) as e:
        Thing(1, old=5)
    assert e.value.fix == "old= is now kl.Part(new=...): kl.Thing(..., part=kl.Part(new=5)); see docs/spec.md."
    with pytest.raises(SpecError) as e:
        Thing(1, old=[1] * 40)                                   # not short and plain: the example
    assert "part=kl.Part(new=7)" in e.value.fix


def test_call_problems_names_a_spec_by_its_first_positional():
    ps = call_problems("kl.Spec", ["name", "kernel"], ["name", "kernel"], ("norm",), {"kernal": 1})
    assert [p.where for p in ps] == [(("kl.Spec", "norm"), "kernal")]          # kernel is meant, not missing
    ps = call_problems("kl.Other", ["name"], ["name"], ("norm",), {"x": 1})
    assert ps[0].where == (("kl.Other", None), "x")
    assert call_problems("kl.Spec", ["name"], ["name"], (), {}) == (
        Problem((("kl.Spec", None), "name"), None, "kl.Spec needs name (its fields are name)."),)
