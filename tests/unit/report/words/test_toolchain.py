"""report/words/toolchain.py: rung 7's words (what ran, dispatch, flags, imports) and rung 6's
(collectives, hung ranks), from facts built here."""
from __future__ import annotations

from kladder.core import facts as F
from kladder.core.outcome import Check, Finding
from kladder.report.words import message
from kladder.report.words.toolchain import env_setting, env_values, expect_text, launch_text, ran_text

LAUNCH = {"name": "_decode_kernel", "params": {"BLOCK_N": 64, "layout": "row", "num_warps": 4}}


def test_launch_text_quotes_only_strings():
    assert launch_text(LAUNCH) == "_decode_kernel(BLOCK_N=64, layout='row', num_warps=4)"
    assert launch_text({"name": "k", "params": {}}) == "k()"


def test_ran_text_lists_each_kind_and_says_how_many_in_all():
    x = F.RanFacts(launches=[LAUNCH], n_launches=3, gpu=["g" * 100], n_gpu=1, functions=["f", "g"], n_functions=2)
    assert ran_text(x) == ("Triton _decode_kernel(BLOCK_N=64, layout='row', num_warps=4), ... (3 in all); "
                           f"GPU kernels {'g' * 80}; Python f, g")
    assert ran_text(F.RanFacts()) == "no Triton kernel, GPU kernel or Python function of the kernel's own"


def test_expect_text_with_and_without_a_label_and_a_launch():
    assert expect_text({"kernel": "k", "launch": {}, "label": ""}) == "`k`"
    assert expect_text({"kernel": "k", "launch": {"BLOCK": 64, "W": 4}, "label": "the fast path"}) == \
        "the fast path (`k` launched with BLOCK=64, W=4)"


def test_env_values_and_setting():
    assert env_values({"MYLIB_FAST": "1", "OTHER": None}) == "MYLIB_FAST=1, OTHER unset"
    assert env_setting({"A": "1"}, None, None) == "A=1 in the environment from the process's start"
    assert env_setting({"A": "1", "B": None}, "after_import", {"A": "0"}) == (
        "A=1 set, B removed after the kernel's module was imported and the kernel called once (the process started "
        "with A=0)")
    assert env_setting({"A": "1"}, "after_import", None).endswith("(the process started with them unset)")


# ---------------------------------------------------------------------------- dispatch
def _dispatch(**kw) -> Finding:
    base = dict(expected=[{"kernel": "fast", "launch": {}, "label": ""}], ran=F.RanFacts(functions=["slow"], n_functions=1))
    return Finding(Check.DISPATCH, facts=F.DispatchFacts(**{**base, **kw}))


def test_dispatch_another_path_ran():
    assert message(_dispatch()) == ("expected `fast` to run here, and it did not: the call took another path. Ran "
                                    "instead: Python slow")


def test_dispatch_with_a_variable_set_after_import_and_a_forbidden_kernel_that_ran():
    f = _dispatch(env={"FAST": "1"}, env_set="after_import", started={"FAST": None},
                  forbidden=[{"kernel": "ref", "launch": {}, "label": ""}])
    assert message(f) == (
        "expected `fast` to run here, with FAST=1 set after the kernel's module was imported and the kernel called "
        "once (the process started with FAST unset), and it did not: the call took another path. Ran instead: Python "
        "slow. A launcher that reads the variable once, at import or at its first call, keeps the value it read: a "
        "program that sets it later, as a serving launcher does from its config, never gets that path. And `ref` must "
        "not run here, but did")


def test_dispatch_of_only_forbidden_kernels():
    f = _dispatch(expected=[], forbidden=[{"kernel": "ref", "launch": {}, "label": "the fallback"}])
    assert message(f) == ("the fallback (`ref`) must not run here (the spec says the launcher refuses: runs=False), "
                          "and the call returned, having run: Python slow")


# ---------------------------------------------------------------------------- flags
def _flag(**kw) -> Finding:
    base = dict(flag="USE_TMA", values=[True, False], how="source",
                runs=[{"value": True, "launches": [LAUNCH], "gpu": []}, {"value": False, "launches": [], "gpu": ["g"]}])
    return Finding(Check.FLAG_NO_EFFECT, facts=F.FlagNoEffectFacts(**{**base, **kw}))


def test_a_keyword_flag_that_changes_nothing():
    assert message(_flag()) == (
        "the flag USE_TMA changes nothing: its values True, False all ran the same code (kernel source and the "
        "constexprs it reads, argument specialisation, launch options: Triton's interpreter compiles nothing). "
        "USE_TMA=True ran _decode_kernel(BLOCK_N=64, layout='row', num_warps=4); USE_TMA=False ran g. The flag never "
        "reaches code generation, so no test can tell it on from off")


def test_a_variable_flag_set_after_import():
    runs = [{"value": "1", "started": None, "launches": [], "gpu": ["k1"]},
            {"value": None, "started": None, "launches": [], "gpu": ["k1"]}]
    f = _flag(flag="$FAST", variable="FAST", values=["1", None], how="names", runs=runs, set="after_import")
    assert message(f).startswith(
        "the variable FAST changes nothing when it is set after the kernel's module was imported and the kernel called "
        "once: its values '1', unset, each set then in a process that started with the first, all ran the same GPU "
        "kernels. FAST=1 (started with FAST unset) ran k1; FAST unset (started with FAST unset) ran k1. The launcher")


# ---------------------------------------------------------------------------- imports
def test_import_contract_missing_and_untested():
    missing = F.ImportContractFacts(name="lib.fast", problem="missing", error="ImportError", text="no module")
    assert message(Finding(Check.IMPORT_CONTRACT, facts=missing)) == (
        "downstream code imports lib.fast, and it does not resolve: ImportError: no module. A copy that imports it "
        "breaks, or falls back quietly")
    untested = F.ImportContractFacts(name="lib.fast", problem="untested", object="lib._impl.fast")
    assert message(Finding(Check.IMPORT_CONTRACT, facts=untested)).startswith(
        "downstream code imports lib.fast, which resolves to lib._impl.fast, and the kernel's call never runs it")


def test_caught_import():
    x = F.CaughtImportFacts(module="lib", where="lib/__init__.py:3", error="ImportError", text="no triton")
    assert message(Finding(Check.CAUGHT_IMPORT, facts=x)).startswith(
        "importing `lib` raised ImportError at lib/__init__.py:3 (no triton) and caught it")


# ---------------------------------------------------------------------------- rung 6
def _collective(**kw) -> Finding:
    base = dict(ranks={"0": [], "1": list(range(10))}, sizes_wrong=[7, 9], sizes=[4, 7, 9], dim="N", world=2, lag=1,
                queued=16, kinds=["values", "guard", "other"])
    return Finding(Check.COLLECTIVE, mismatched=10, total=32, facts=F.CollectiveFacts(**{**base, **kw}))


def test_a_collective_names_each_rank_the_lagging_one_and_the_sizes():
    assert message(_collective()).split("\n") == [
        "10 of 32 outputs wrong (31%) over 2 ranks and 16 calls queued before one synchronisation, only at N = 7, 9 "
        "(of 4, 7, 9):",
        "rank 0 in none of its calls; rank 1 (lagging) in 10 of 16 calls (0, 1, 2, 3, 4, 5, 6, 7 and 2 more).",
        "The collective completed and returned wrong values and writes past its tensors (guard bytes) and other; the "
        "first wrong call of each rank follows"]
    every = message(_collective(sizes_wrong=[4, 7, 9]))
    assert "one synchronisation, at every size of N:" in every


def _hung(ranks) -> Finding:
    return Finding(Check.RANKS_HUNG, facts=F.RanksHungFacts(watchdog_s=30, waited_s=31.5, queued=8, dim="N", lag=1,
                                                            ranks=ranks))


def test_hung_ranks_say_where_each_stopped():
    ranks = [{"rank": 0, "phase": "calls", "finished": 2, "launched": 3, "size": 4096},
             {"rank": 1, "phase": "calls", "finished": 2, "launched": 2},
             {"rank": 2, "phase": "sync", "finished": 7, "launched": 8, "size": 1},
             {"rank": 3, "phase": "done", "finished": 8, "launched": 8},
             {"rank": 4, "phase": "setup", "finished": 0, "launched": 0},
             {"rank": 5, "phase": "teardown", "finished": 8, "launched": 8}]
    assert message(_hung(ranks)) == (
        "the collective hung: no rank made progress for 31.5 s (watchdog 30 s), and the ranks were killed: "
        "rank 0 stopped in call 3 of 8 (N = 4,096), 2 finished; rank 1 (lagging) stopped before call 3 of 8, 2 finished; "
        "rank 2 had queued all 8 calls; call 8 (N = 1) never finished; rank 3 had finished every call; "
        "rank 4 stopped in setup (building its communicator); rank 5 stopped in its teardown phase")
