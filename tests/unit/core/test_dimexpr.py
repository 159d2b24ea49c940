"""kladder.core.dimexpr: a value range's bounds over dim names, never eval'd."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.core.dimexpr import DimExprError, evaluate, names


def test_names_are_in_first_use_order_without_repeats():
    assert names("N*M + N - K // M") == ["N", "M", "K"]
    assert names("7") == []
    assert names("-E") == ["E"]


@pytest.mark.parametrize("text,sizes,want", [
    ("E-1", {"E": 1}, 0), ("-N", {"N": 3}, -3), ("-(N - 10)", {"N": 3}, 7), ("N // 4", {"N": 7}, 1),
    ("(0 - N) // 4", {"N": 7}, -2),                  # floor division, as Python's: -7 // 4 is -2, not -1
    ("  2 * S  ", {"S": 5}, 10), ("N*N*N", {"N": 1 << 11}, 1 << 33),   # past 2^32: Python ints, no wrap
    ("3 - 2 - 1", {}, 0),                             # left-associative
])
def test_evaluate(text, sizes, want):
    assert evaluate(text, sizes) == want


@pytest.mark.parametrize("text,says", [
    ("N / 2", "'N / 2' is not an integer"), ("N ** 2", "'N ** 2' is not an integer"), ("N % 2", "'N % 2'"),
    ("1.5", "'1.5' is not an integer"), ("True", "'True' is not an integer"), ("+N", "'+N' is not an integer"),
    ("f(N)", "'f(N)'"), ("N.real", "'N.real'"), ("__import__('os')", "__import__"), ("'8'", "\"'8'\" is not"),
    ("N if M else K", "is not an integer"), ("~N", "'~N'"),
])
def test_what_is_not_a_dim_expression_is_refused_before_anything_runs(text, says):
    with pytest.raises(DimExprError, match=None) as e:
        names(text)
    assert says in str(e.value)
    with pytest.raises(DimExprError):
        evaluate(text, {"N": 1, "M": 1, "K": 1, "f": 1})


@pytest.mark.parametrize("text", ["", "N +", "(N", "N = 1", "import os"])
def test_text_that_does_not_parse_is_named(text):
    with pytest.raises(DimExprError, match="does not parse") as e:
        names(text)
    assert repr(text) in str(e.value)


def test_a_dim_without_a_size_is_a_key_error():
    with pytest.raises(KeyError, match="M"):
        evaluate("N + M", {"N": 1})


@settings(max_examples=50, deadline=None)
@given(a=st.integers(-10**6, 10**6), b=st.integers(1, 10**6), c=st.integers(-50, 50))
def test_evaluate_is_integer_arithmetic(a, b, c):
    assert evaluate("(A + C) * B - A // B", {"A": a, "B": b, "C": c}) == (a + c) * b - a // b
    assert names("(A + C) * B - A // B") == ["A", "C", "B"]
