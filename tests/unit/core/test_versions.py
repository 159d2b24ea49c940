"""kladder.core.versions: release numbers, and the specifier reading kladder falls back to where
packaging is not importable, which must agree with packaging's."""
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.core import versions


@pytest.fixture
def no_packaging(monkeypatch):
    """packaging not importable: parse_specifier falls back to versions._parse."""
    monkeypatch.setitem(sys.modules, "packaging.specifiers", None)


@pytest.mark.parametrize("text,want", [("2.6.0a0+git1234", "2.6.0"), ("2.5.1+cu124", "2.5.1"), ("12.4", "12.4"),
                                       ("v3.1", "3.1"), (" 9", "9"), ("abc", None), ("", None), (".5", None)])
def test_release_is_the_leading_numbers(text, want):
    assert versions.release(text) == want


def test_an_absent_or_unnumbered_version_satisfies_nothing():
    assert versions.holds(">=0", None) is False
    assert versions.holds("!=1.0", "unknown") is False


def test_installed_reads_metadata_and_says_none_when_absent():
    assert versions.installed("pytest") == pytest.__version__
    assert versions.installed("kladder-no-such-package") is None


@pytest.mark.parametrize("text,why", [("", "holds no comparison"), ("nope", "is not a version specifier"),
                                      (">=", "is not a version specifier")])
def test_a_bad_specifier_is_refused_with_packaging(text, why):
    with pytest.raises(ValueError, match=why) as e:
        versions.parse_specifier(text)
    assert repr(text) in str(e.value)


@pytest.mark.parametrize("text", ["", ">=2.6,", "=>2", ">=2.6a0", "v2", "2.6", ">=x", ">=2.6 <3"])
def test_a_bad_specifier_is_refused_without_packaging(no_packaging, text):
    with pytest.raises(ValueError, match="is not a version specifier") as e:
        versions.parse_specifier(text)
    assert repr(text) in str(e.value)


def test_the_fallback_reads_every_comparison_joined_by_commas(no_packaging):
    assert versions.parse_specifier(">=2.4, <2.7,!=2.5") == [(">=", "2.4"), ("<", "2.7"), ("!=", "2.5")]
    assert versions.parse_specifier("~=3.1") == [("~=", "3.1")]


@pytest.mark.parametrize("spec,version,ok", [
    (">=2.6", "2.6.0a0+git1234", True), (">=2.6", "2.5.1+cu124", False), ("==2.6", "2.6.0", True),
    ("!=2.6", "2.6.0", False), ("~=2.5.1", "2.5.9", True), ("~=2.5.1", "2.6.0", False), ("~=2.5.1", "2.5.0", False),
    ("~=3.1", "3.9", True), ("~=3.1", "4.0", False), (">2", "2.0.0", False), ("<12.4", "12.3.99", True),
    (">=2.4,<2.7", "2.7.0", False), (">=2.4,<2.7", "2.4", True),
])
def test_the_fallback_compares_releases(no_packaging, spec, version, ok):
    assert versions.holds(spec, version) is ok


_release = st.lists(st.integers(0, 3), min_size=1, max_size=3).map(lambda xs: ".".join(map(str, xs)))


@settings(max_examples=50, deadline=None)
@given(op=st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~="]), want=_release, have=_release)
def test_the_fallback_agrees_with_packaging(op, want, have):
    if op == "~=" and "." not in want:
        want += ".0"                                  # packaging admits ~= only on two or more numbers
    text = f"{op}{want}"
    with_packaging = versions.holds(text, have)
    sys.modules["packaging.specifiers"], saved = None, sys.modules.get("packaging.specifiers")
    try:
        without = versions.holds(text, have)
    finally:
        sys.modules["packaging.specifiers"] = saved
    assert without == with_packaging, (text, have)
