"""kladder.tools.cli.parser: each command's options, defaults and argument types, parsed in-process."""
import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.tools.cli.parser import SANITIZERS, SHRINK_S, _positive, build_parser


@pytest.fixture(scope="module")
def parser():
    return build_parser()


def usage_error(parser, argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        parser.parse_args(argv)
    assert e.value.code == 2
    return capsys.readouterr().err


# ---------------------------------------------------------------------------- _positive
@pytest.mark.parametrize("text,want", [("1", 1.0), ("0.5", 0.5), ("1e-9", 1e-9), ("60", 60.0)])
def test_positive_float_accepts_more_than_zero(text, want):
    assert _positive(float, "seconds")(text) == want


@pytest.mark.parametrize("text,says", [("0", "'0': give seconds (more than 0)"), ("-1", "'-1': give seconds (more than 0)"),
                                       ("inf", "'inf': give seconds (more than 0)"), ("nan", "'nan': give seconds (more than 0)"),
                                       ("abc", "'abc': give seconds"), ("", "'': give seconds")])
def test_positive_float_refuses_zero_negative_infinite_nan_and_words(text, says):
    with pytest.raises(argparse.ArgumentTypeError) as e:
        _positive(float, "seconds")(text)
    assert str(e.value) == says


def test_positive_with_zero_admits_zero_and_says_so():
    parse = _positive(float, "seconds", zero=True)
    assert parse("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match=r"'-0.1': give seconds \(0 or more\)"):
        parse("-0.1")
    with pytest.raises(argparse.ArgumentTypeError, match=r"\(0 or more\)"):
        parse("inf")


def test_positive_int_refuses_a_fraction():
    parse = _positive(int, "a number of workers")
    assert parse("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'1.5': give a number of workers$"):
        parse("1.5")
    with pytest.raises(argparse.ArgumentTypeError, match=r"'0': give a number of workers \(more than 0\)"):
        parse("0")


@settings(max_examples=50, deadline=None)
@given(v=st.floats(allow_nan=True, allow_infinity=True))
def test_positive_float_admits_exactly_the_finite_positive_numbers(v):
    parse = _positive(float, "seconds")
    if v > 0 and v != float("inf"):
        assert parse(repr(v)) == v
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(repr(v))


# ---------------------------------------------------------------------------- climb
def test_climbs_defaults(parser):
    a = parser.parse_args(["climb", "x.py"])
    assert a.cmd == "climb" and a.refs == ["x.py"]
    assert (a.device, a.rungs, a.seed, a.budget, a.shrink_s, a.color, a.jobs, a.timeout) == \
        ("auto", None, 0, "commit", SHRINK_S, "auto", None, None)
    assert (a.quiet, a.verbose, a.fresh, a.exitfirst, a.lf, a.no_history, a.golden) == (False,) * 6 + (None,)
    assert a.shard is None and a.ray is None and a.store_size > 0


def test_climb_takes_several_refs_and_every_option(parser):
    a = parser.parse_args(["climb", "a.py", "b.py::s", "--rungs", "1-3", "--device", "cpu", "-j", "2", "--timeout",
                           "1.5", "--repeat", "10", "--repeat-s", "0.5", "--seed", "-3", "--budget", "release",
                           "--shrink-s", "0", "-q", "-v", "-x", "--lf", "--golden", "--shard", "2/4", "--json", "r.json"])
    assert a.refs == ["a.py", "b.py::s"] and a.rungs == "1-3" and a.jobs == 2 and a.timeout == 1.5
    assert (a.repeat, a.repeat_s, a.seed, a.budget, a.shrink_s) == (10, 0.5, -3, "release", 0.0)
    assert a.quiet and a.verbose and a.exitfirst and a.lf and a.golden == "warn" and a.shard == "2/4"
    assert parser.parse_args(["climb", "a.py", "--golden=strict"]).golden == "strict"


@pytest.mark.parametrize("argv,says", [
    (["climb"], "the following arguments are required: PATH[::NAME]"),
    (["climb", "x.py", "--timeout", "0"], "argument --timeout: '0': give seconds, e.g. 60 (more than 0)"),
    (["climb", "x.py", "-j", "0"], "argument -j/--jobs: '0': give a number of workers, e.g. 2 (more than 0)"),
    (["climb", "x.py", "--repeat", "1e3"], "argument --repeat: '1e3': give a number of calls"),
    (["climb", "x.py", "--shrink-s", "-1"], "(0 or more)"),
    (["climb", "x.py", "--color", "sometimes"], "argument --color: invalid choice: 'sometimes'"),
    (["climb", "x.py", "--budget", "nightly"], "argument --budget: invalid choice: 'nightly'"),
    (["climb", "x.py", "--golden=lenient"], "argument --golden: invalid choice: 'lenient'"),
    (["climb", "x.py", "--seed", "one"], "argument --seed: invalid int value: 'one'"),
    ([], "the following arguments are required: cmd"),
    (["launch"], "invalid choice: 'launch'"),
])
def test_climbs_usage_errors_name_the_option_and_the_value(parser, capsys, argv, says):
    assert says in usage_error(parser, argv, capsys)


# ---------------------------------------------------------------------------- the other commands
def test_repro_options(parser, capsys):
    a = parser.parse_args(["repro", "x.py::s", "{'spec': 's'}", "--sanitize", "racecheck", "--seed", "2", "--pdb"])
    assert (a.ref, a.point, a.sanitize, a.seed, a.pdb, a.save, a.device) == ("x.py::s", "{'spec': 's'}", "racecheck", 2,
                                                                             True, None, "auto")
    assert SANITIZERS == ("memcheck", "racecheck", "initcheck", "synccheck")
    assert "invalid choice: 'asan'" in usage_error(parser, ["repro", "x.py", "{}", "--sanitize", "asan"], capsys)
    assert "required: point" in usage_error(parser, ["repro", "x.py"], capsys)


def test_bisect_needs_a_point_or_rungs_never_both(parser, capsys):
    assert parser.parse_args(["bisect", "g", "b", "x.py", "--rungs", "1"]).rungs == "1"
    assert parser.parse_args(["bisect", "g", "b", "x.py", "--point", "{}"]).point == "{}"
    assert "one of the arguments --point --rungs is required" in usage_error(parser, ["bisect", "g", "b", "x.py"], capsys)
    assert "argument --rungs: not allowed with argument --point" in usage_error(
        parser, ["bisect", "g", "b", "x.py", "--point", "{}", "--rungs", "1"], capsys)


def test_explore_defaults(parser, capsys):
    a = parser.parse_args(["explore", "x.py"])
    assert (a.budget_s, a.shrink_s, a.rungs, a.seed, a.device) == (60.0, None, "1-2", None, "auto")
    assert "argument --budget-s: '0'" in usage_error(parser, ["explore", "x.py", "--budget-s", "0"], capsys)


def test_bench_options(parser, capsys):
    a = parser.parse_args(["bench", "a.py", "--against", "b.py", "--rounds", "5", "--calls", "3", "--flops", "2*M*N*K"])
    assert (a.against, a.rounds, a.calls, a.warmup, a.flops) == ("b.py", 5, 3, None, "2*M*N*K")
    assert "argument --warmup: '-1'" in usage_error(parser, ["bench", "a.py", "--warmup", "-1"], capsys)


def test_points_options(parser):
    a = parser.parse_args(["points", "x.py", "--shard", "1/2", "--no-history", "--budget", "release"])
    assert (a.shard, a.no_history, a.budget, a.seed, a.json) == ("1/2", True, "release", 0, None)


def test_zoo_needs_its_subcommand_and_takes_climb_options(parser, capsys):
    assert "required: zoo_cmd" in usage_error(parser, ["zoo"], capsys)
    a = parser.parse_args(["zoo", "climb", "c1", "c2", "--fixed", "--cases-at-once", "3", "--device", "cpu"])
    assert (a.zoo_cmd, a.case, a.fixed, a.cases_at_once, a.shrink_s) == ("climb", ["c1", "c2"], True, 3, SHRINK_S)
    assert parser.parse_args(["zoo", "climb"]).case == []
    assert "argument --cases-at-once: '0'" in usage_error(parser, ["zoo", "climb", "--cases-at-once", "0"], capsys)


def test_merge_takes_reports(parser, capsys):
    a = parser.parse_args(["merge", "a.json", "b.json", "--json", "m.json"])
    assert a.reports == ["a.json", "b.json"] and a.json == "m.json" and a.color == "auto"
    assert "required: REPORT.json" in usage_error(parser, ["merge"], capsys)


def test_the_history_commands_are_parsed_here_too(parser):
    assert {"history", "diff", "golden", "report"} <= set(parser._subparsers._group_actions[0].choices)
    assert parser.parse_args(["history", "-n", "3"]).limit == 3
