"""checks/imports.py: whether a name downstream code imports is code the kernel's call runs
(the kernel, a function it called, a JIT kernel it launched through wrappers, a module or class
whose code ran), the contracts' findings, and the caught ImportErrors as warnings."""
import functools
import json
import types

from kladder.checks import imports as imports_check
from kladder.checks.imports import caught, contracts
from kladder.core.chain import Link, chain
from kladder.core.outcome import Check, Finding
from kladder.run.modes.base import Imported


def kernel(x):
    return helper(x)


def helper(x):
    return x


def untouched(x):
    return x


class Ops:
    def run(self, x):
        return x

    def other(self, x):
        return x


runs = imports_check.tested      # not imported by its name: pytest would collect `tested` as a test


def _spec(k=kernel):
    return types.SimpleNamespace(kernel=k)


def _imported(called=(), launched=(), resolved=(), caught_=()):
    return Imported(list(resolved), set(called), list(launched), list(caught_), [])


def test_the_kernel_itself_is_tested_and_a_function_it_never_called_is_not():
    imp = _imported(called={helper.__code__})
    assert runs(_spec(), kernel, imp)
    assert runs(_spec(), helper, imp)
    assert not runs(_spec(), untouched, imp)


def test_a_wrapped_function_a_partial_and_a_bound_method_resolve_to_their_code():
    @functools.wraps(helper)
    def wrapper(x):
        return helper(x)
    imp = _imported(called={helper.__code__, Ops.run.__code__})
    assert runs(_spec(), wrapper, imp)                        # inspect.unwrap: helper's code
    assert runs(_spec(), functools.partial(helper, 1), imp)
    assert runs(_spec(), Ops().run, imp)                      # a bound method: its __func__'s code
    assert not runs(_spec(), Ops().other, imp)


def test_every_function_of_a_chain_is_the_kernel():
    first, second = (lambda x: x), (lambda x: x)
    spec = _spec(chain(Link(first, ("a",)), Link(second, ("b",))))
    assert runs(spec, second, _imported())
    assert not runs(spec, untouched, _imported())


class _Jit:                       # a @triton.jit function's shape: `fn` is the Python body
    def __init__(self, fn):
        self.fn = fn


def test_a_jit_kernel_launched_through_wrappers_is_tested_up_to_four_levels():
    jit = _Jit(untouched)
    autotuned = _Jit(_Jit(jit))                                 # autotune(heuristics(jit))
    assert runs(_spec(), autotuned, _imported(launched=[jit]))
    assert runs(_spec(), _Jit(_Jit(_Jit(jit))), _imported(launched=[jit]))         # three wrappers: followed
    four = _Jit(_Jit(_Jit(_Jit(jit))))                                          # four: past the four looked at
    assert not runs(_spec(), four, _imported(launched=[jit]))
    assert not runs(_spec(), autotuned, _imported(launched=[_Jit(untouched)]))    # another JIT object


def test_a_jit_kernel_whose_body_ran_as_a_rewritten_copy_is_tested_by_file_and_name():
    rewritten = compile("def untouched(x):\n    return x + 0\n", untouched.__code__.co_filename, "exec")
    body = next(c for c in rewritten.co_consts if isinstance(c, types.CodeType))
    assert body != untouched.__code__                           # not the same code object
    assert runs(_spec(), _Jit(untouched), _imported(called={body}))
    other = compile("def elsewhere(x):\n    return x\n", untouched.__code__.co_filename, "exec")
    assert not runs(_spec(), _Jit(untouched), _imported(called={next(c for c in other.co_consts
                                                                         if isinstance(c, types.CodeType))}))


def test_a_module_is_tested_when_code_of_its_file_ran_or_one_of_its_jit_kernels_launched():
    import kladder.checks.guards as mod
    from kladder.checks.guards import guards
    assert runs(_spec(), mod, _imported(called={guards.__code__}))
    assert not runs(_spec(), mod, _imported(called={helper.__code__}))
    assert runs(_spec(), mod, _imported(launched=[_Jit(guards)]))


def test_a_class_is_tested_when_one_of_its_methods_ran():
    assert runs(_spec(), Ops, _imported(called={Ops.other.__code__}))
    assert not runs(_spec(), Ops, _imported(called={helper.__code__}))


def test_contracts_name_a_missing_and_an_untested_name_and_pass_the_rest():
    resolved = [("lib:kernel", kernel, None), ("lib:untouched", untouched, None),
                ("lib:gone", None, {"error": "AttributeError", "text": "no attribute 'gone'"})]
    found = contracts(_spec(), _imported(resolved=resolved))
    assert [(f.check, f.facts.name, f.facts.problem) for f in found] == [
        (Check.IMPORT_CONTRACT, "lib:untouched", "untested"), (Check.IMPORT_CONTRACT, "lib:gone", "missing")]
    assert found[0].facts.object.startswith("<function untouched") and found[0].facts.error is None
    assert (found[1].facts.error, found[1].facts.text) == ("AttributeError", "no attribute 'gone'")
    assert contracts(_spec(), _imported(resolved=resolved[:1])) == []


def test_an_untested_objects_repr_is_cut_at_120_characters_and_round_trips():
    class Long:
        def __repr__(self):
            return "x" * 500
    (f,) = contracts(_spec(), _imported(resolved=[("lib:long", Long(), None)]))
    assert f.facts.object == "x" * 120
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False))) == f


def test_each_caught_import_error_is_a_warning_of_its_own():
    seen = [{"error": "ImportError", "text": "no module named fastlib", "module": "lib", "where": "lib.py:3"},
            {"error": "ModuleNotFoundError", "text": "x", "module": "lib.b", "where": "b.py:1"}]
    ws = caught(_imported(caught_=seen))
    assert [(w.check, w.facts.module, w.facts.where) for w in ws] == [
        (Check.CAUGHT_IMPORT, "lib", "lib.py:3"), (Check.CAUGHT_IMPORT, "lib.b", "b.py:1")]
    assert caught(_imported()) == []
