"""kladder.core.chain: links fed by name from the spec's args and the outputs of the links before."""
import pytest

from kladder.core.chain import Chain, Link, chain


def quantize(x, scale=2):
    return [v * scale for v in x], scale


def gemm(xq, xs, w):
    return sum(a * b for a, b in zip(xq, w, strict=True)) / xs


def test_each_link_gets_the_outputs_of_the_links_before_by_name():
    c = chain(Link(quantize, outputs=("xq", "xs")), Link(gemm, outputs=("y",))).bound(["x", "w"])
    assert c(([1, 2, 3]), [1, 1, 1]) == 6.0
    assert c.__name__ == "quantize -> gemm"
    assert c.functions() == [quantize, gemm]


def test_a_keyword_fills_a_parameter_no_earlier_link_names_and_a_default_stays_otherwise():
    seen = []

    def first(x, scale=2):
        seen.append(scale)
        return x

    c = chain(Link(first)).bound(["x"])
    assert c(5) == 5 and seen == [2]
    assert c(5, scale=7) == 5 and seen == [2, 7]


def test_the_scope_wins_over_a_keyword_of_the_same_name():
    c = chain(Link(lambda x: x + 1, outputs=("x",)), Link(lambda x: x * 10)).bound(["x"])
    assert c(1, x=100) == 20                       # the second link reads the first's `x`, not the keyword


def test_a_later_output_shadows_an_argument_of_the_same_name():
    c = chain(Link(lambda a: a + 1, outputs=("a",)), Link(lambda a: a, outputs=("out",))).bound(["a"])
    assert c(1) == 2


def test_var_args_are_not_fed():
    def takes_rest(x, *args, **kwargs):
        return (x, args, kwargs)

    assert chain(Link(takes_rest)).bound(["x"])(3, y=4) == (3, (), {})


def test_one_output_is_the_whole_result_even_a_tuple():
    pair = (1, 2)
    c = chain(Link(lambda x: pair, outputs=("p",)), Link(lambda p: p)).bound(["x"])
    assert c(0) is pair


def test_too_many_positional_arguments_names_the_chain_and_its_names():
    c = chain(Link(quantize, outputs=("xq", "xs")), Link(gemm)).bound(["x", "w"])
    with pytest.raises(TypeError, match=r"chain quantize -> gemm: called with 3 positional args; it knows the names of 2 \(x, w\)"):
        c(1, 2, 3)


def test_an_unbound_chain_knows_no_names():
    with pytest.raises(TypeError, match="called with 1 positional args; it knows the names of 0"):
        chain(Link(quantize))([1])


def test_a_parameter_nothing_names_is_refused_naming_the_link_and_the_parameter():
    c = chain(Link(quantize, outputs=("xq", "xs")), Link(gemm)).bound(["x"])
    with pytest.raises(TypeError, match=r"chain link gemm: nothing named 'w' among the spec's args \(x\)"):
        c([1])


@pytest.mark.parametrize("returned,type_name", [(5, "int"), ((1, 2, 3), "tuple"), ({"a": 1, "b": 2}, "dict")])
def test_a_link_that_returns_other_than_its_declared_outputs_is_refused(returned, type_name):
    c = chain(Link(lambda x: returned, outputs=("a", "b"))).bound(["x"])
    with pytest.raises(TypeError, match=rf"declared outputs \('a', 'b'\) but returned {type_name}"):
        c(0)


def test_a_list_counts_as_several_outputs():
    c = chain(Link(lambda x: [x, x + 1], outputs=("a", "b")), Link(lambda a, b: a * b)).bound(["x"])
    assert c(3) == 12


@pytest.mark.parametrize("links,says", [
    ((), "give at least one kl.Link"),
    ((quantize,), "link 0 is function; wrap it: kl.Link"),
    ((Link(quantize), "gemm"), "link 1 is str"),
    ((Link(42),), "link 0's fn is not callable: 42"),
])
def test_chain_refuses_what_is_not_a_list_of_links(links, says):
    with pytest.raises(TypeError, match=None) as e:
        chain(*links)
    assert says in str(e.value)


def test_bound_makes_a_new_chain_and_keeps_the_original():
    c = chain(Link(quantize))
    b = c.bound(("x",))
    assert isinstance(b, Chain) and b is not c and b.names == ("x",) and c.names == ()
    assert b.links is c.links


def test_a_link_is_named_by_its_function_or_its_repr():
    class Callable:
        def __call__(self, x):
            return x

        def __repr__(self):
            return "<my op>"

    assert Link(quantize).name == "quantize"
    assert Link(Callable()).name == "<my op>"
    assert Link(quantize).outputs == ("out",)
