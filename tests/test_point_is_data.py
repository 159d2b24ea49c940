"""A point is data (issue 36, item 1): `kladder repro` runs a point a user may have copied from
someone else's report. It sets only environment variables the spec declares, to values it
declares; every other field is checked against the spec; the text is bounded in size and depth.
A refused point is exit 2 naming the field, and nothing of it runs (a sitecustomize.py on a
PYTHONPATH it names never runs)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)
TRIVIAL = os.path.join(HERE, "specs", "trivial.py")
CONDITIONS = os.path.join(HERE, "specs", "conditions.py")
KLADDER = [sys.executable, "-m", "kladder.tools.cli"]


def _evil(tmp_path) -> tuple[str, str]:
    """A folder whose sitecustomize.py writes a marker: run by any Python started with it on PYTHONPATH."""
    evil, marker = tmp_path / "evil", tmp_path / "PWNED"
    evil.mkdir()
    (evil / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    return str(evil), str(marker)


def _repro(ref: str, point: dict, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([*KLADDER, "repro", ref, json.dumps(point), "--device", "cpu", "--no-history", *extra],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("var", ["PYTHONPATH", "LD_PRELOAD", "PYTHONSTARTUP"])
def test_a_point_that_sets_an_undeclared_variable_is_refused_and_nothing_runs(tmp_path, var):
    evil, marker = _evil(tmp_path)
    value = evil if var == "PYTHONPATH" else os.path.join(evil, "sitecustomize.py")
    point = {"spec": "double", "rung": 7, "dims": [["N", 2]], "mode": "dispatch", "env": [[var, value]]}
    p = _repro(TRIVIAL, point)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert f"POINT env: {var!r} is not a variable spec 'double' declares" in p.stderr, p.stderr
    assert not os.path.exists(marker)


def test_a_declared_variable_with_an_undeclared_value_is_refused(tmp_path):
    """KLT_FAST is declared (a Flag and an Expect's `when`), but only as unset, "0" or "1"."""
    evil, marker = _evil(tmp_path)
    point = {"spec": "fast_at_call", "rung": 7, "dims": [["N", 129]], "mode": "dispatch",
             "env": [["KLT_FAST", "1"], ["PYTHONPATH", evil]]}
    p = _repro(f"{CONDITIONS}::read_at_call", point)
    assert p.returncode == 2 and "POINT env: 'PYTHONPATH' is not a variable" in p.stderr, p.stderr
    assert not os.path.exists(marker)
    point["env"] = [["KLT_FAST", "2"]]
    p = _repro(f"{CONDITIONS}::read_at_call", point)
    assert p.returncode == 2, p.stderr
    assert "POINT env: KLT_FAST is '2', a value spec 'fast_at_call' does not declare" in p.stderr
    assert "unset (null), '0', '1'" in p.stderr


def _spec(ref: str):
    from kladder.gen.load import load_spec
    return load_spec(ref)


def _check(ref: str, **fields):
    from kladder.core.point import Point
    from kladder.climbing.pointcheck import check_point
    spec = _spec(ref)
    d = {"spec": spec.name, "rung": 1, "dims": [[d, dim.min] for d, dim in spec.dims.items()], **fields}
    check_point(spec, Point.from_dict(d))


def test_a_declared_variable_with_a_declared_value_is_accepted():
    _check(f"{CONDITIONS}::read_at_call", rung=7, mode="dispatch", env=[["KLT_FAST", "1"]])
    _check(f"{CONDITIONS}::read_at_call", rung=7, mode="dispatch", env=[["KLT_FAST", None]], env_set="after_import")


@pytest.mark.parametrize("fields,words", [
    ({"rung": 9}, "POINT rung: 9 is no rung of the ladder"),
    ({"rung": 1, "mode": "sanitize"}, "POINT mode: 'sanitize' is not a mode of rung 1"),
    ({"seed": -5}, "POINT seed: -5 is outside 1..4294967295"),
    ({"seed": 1 << 80}, "POINT seed"),
    ({"layouts": [["x", "diagonal"]]}, "POINT layouts: 'x' is 'diagonal', no layout kladder makes"),
    ({"layouts": [["evil", "sliced"]]}, "POINT layouts: 'evil' is not a tensor of spec 'double'"),
    ({"values": [["evil", "ties"]]}, "POINT values: 'evil' is not a tensor"),
    ({"rung": 4, "mode": "aba", "partner": [["dims", [["N", 99]]]]}, "POINT partner's dims: 'N' is 99, outside"),
    ({"rung": 4, "mode": "aba", "partner": [["code", "x"]]}, "POINT partner: 'code' is neither dims nor config"),
    ({"rung": 7, "mode": "flags", "variant": "$PYTHONPATH"}, "POINT variant: '$PYTHONPATH' is not a flag"),
    ({"rung": 6, "mode": "collective", "ranks": [["world", 2], ["lag", 5], ["lag_us", 0], ["sizes", [4]]]},
     "POINT ranks"),
    ({"rung": 5, "mode": "repeat", "repeat": [["calls", -1]]}, "POINT repeat: calls is -1; give a number more than 0"),
    ({"rung": 5, "mode": "sanitize", "repeat": [["tool", "rm -rf"]]}, "POINT repeat: tool is 'rm -rf'; give one of"),
    ({"rung": 5, "mode": "repeat", "repeat": [["shell", "x"]]}, "POINT repeat: 'shell' is not part of a rung-5 plan"),
    ({"replay": "/etc/x"}, "POINT replay: '/etc/x'; only rung 2's captured points replay"),
    ({"env_set": "after_import"}, "POINT env_set: given without env"),
    ({"rung": 1, "env": [["N", "1"]]}, "POINT env: a eager point sets no variables"),
])
def test_every_field_is_checked_against_the_spec(fields, words):
    from kladder.climbing.pointcheck import PointError
    with pytest.raises(PointError) as e:
        _check(TRIVIAL, **fields)
    assert words in str(e.value)


def test_a_config_value_the_spec_never_gives_is_refused():
    from kladder.climbing.pointcheck import PointError
    ref = "kladder.zoo.gemm_k_tail::spec"
    spec = _spec(ref)
    key, value = next(iter(spec.configs[0].items()))
    _check(ref, config=[[key, value]])
    with pytest.raises(PointError, match=f"POINT config: '{key}' is 'evil', a value the spec never gives it"):
        _check(ref, config=[[key, "evil"]])
    with pytest.raises(PointError, match=f"POINT config: '{key}' is \\(1,\\); give a number"):
        _check(ref, config=[[key, [1]]])


@pytest.mark.parametrize("depth", [50_000, 20])
def test_a_deeply_nested_point_is_a_usage_error_not_a_recursion_error(depth):
    from kladder.core.point import Point
    text = '{"spec": "double", "rung": 1, "dims": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(ValueError, match="nests|characters"):
        Point.parse(text)
    with pytest.raises(ValueError, match="characters"):
        Point.parse('{"spec": "' + "x" * 70_000 + '", "rung": 1, "dims": []}')
    assert Point.parse('{"spec": "[[[[[[[[[[[[[[[[[[[[[[[", "rung": 1, "dims": [["N", 2]]}').spec.startswith("[[")


def test_the_cli_refuses_a_50000_deep_point_with_exit_2():
    deep = "[" * 50_000 + "]" * 50_000
    for text in (deep, '{"spec":"double","rung":1,"dims":' + "[" * 30_000 + "]" * 30_000 + "}"):
        p = subprocess.run([*KLADDER, "repro", TRIVIAL, text, "--device", "cpu", "--no-history"], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 2 and "Traceback" not in p.stderr and "RecursionError" not in p.stderr, p.stderr[-2000:]
        assert "POINT: the point" in p.stderr, p.stderr[-500:]


def test_every_point_the_rungs_make_for_the_conditions_specs_fits_its_spec():
    """The checks refuse only what is wrong: rung 7's env, env_set and variant points, each spec of
    tests/specs/conditions.py, and the toolchain spec, pass them (tests/test_reports.py covers others)."""
    from kladder.climbing.ladder import BUILT, rung_points
    from kladder.gen.load import load_module
    from kladder.core.point import Point
    from kladder.climbing.pointcheck import check_point
    from kladder.core.sizes import budget_for
    from kladder.core.spec import Spec
    n = envs = 0
    for path in (CONDITIONS, os.path.join(HERE, "specs", "toolchain.py")):
        for spec in {id(v): v for v in vars(load_module(path)).values() if isinstance(v, Spec)}.values():
            for device in ("cpu", "cuda"):
                for rung in BUILT:
                    for point in rung_points(spec, rung, budget_for(device)):
                        check_point(spec, Point.parse(repr(point)))
                        n += 1
                        envs += bool(point.env)
    assert n > 50 and envs > 4
