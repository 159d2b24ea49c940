"""report/words/contracts.py: outputs of the wrong kind, guard bytes, inputs changed, a reference
that runs the kernel, from facts built here."""
from __future__ import annotations

from kladder.core import facts as F
from kladder.core.outcome import Check, Finding, Pattern
from kladder.report.words import message


def _say(check: Check, facts, output: str = "y", **kw) -> str:
    return message(Finding(check, output=output, facts=facts, **kw))


# ---------------------------------------------------------------------------- contract
def test_contract_not_a_tensor_and_a_wrong_number_of_outputs():
    assert _say(Check.CONTRACT, F.ContractFacts(not_tensor="list")) == "`y` is a list, not a tensor"
    assert _say(Check.CONTRACT, F.ContractFacts(returned="1 tensor", declared=["y", "idx"])) == \
        "the kernel returned 1 tensor; the spec declares 2 outputs (y, idx)"


def test_contract_reference_shape():
    assert _say(Check.CONTRACT, F.ContractFacts(reference_shape=[4, 8], kernel_shape=[4, 7])) == \
        "the reference returned shape (4, 8) for `y`, the kernel (4, 7)"


def test_contract_problems_joined_and_lists_shown_as_tuples():
    x = F.ContractFacts(problems=[["dtype", "float32", "float16"], ["shape", [4, 7], [4, 8]]])
    assert _say(Check.CONTRACT, x) == ("`y` has dtype float32 where float16 was expected and shape (4, 7) where (4, 8) "
                                       "was expected")


# ---------------------------------------------------------------------------- guard
def test_guard_after_the_end_counts_elements_by_the_itemsize():
    x = F.GuardFacts(itemsize=4, n_after=8, n_before=0, after_lo=0, after_hi=7)
    assert _say(Check.GUARD, x) == ("8 guard bytes after the end of `y` were overwritten (bytes 0..7 past the end: "
                                    "elements 0..1 past the last)")


def test_guard_on_both_sides():
    x = F.GuardFacts(itemsize=2, n_after=2, n_before=3, after_lo=4, after_hi=5, before_lo=1, before_hi=3)
    assert _say(Check.GUARD, x) == ("2 guard bytes after the end of `y` were overwritten (bytes 4..5 past the end: "
                                    "elements 2..2 past the last); 3 guard bytes before the start of `y` were "
                                    "overwritten (bytes 1..3 before it)")


def test_guard_of_a_tensor_the_kernel_allocated():
    returned = F.AllocatedFacts(op="empty", shape=[4, 7], dtype="float16", returned=True)
    x = F.GuardFacts(itemsize=2, n_after=0, n_before=2, before_lo=0, before_hi=1, allocated=returned)
    assert _say(Check.GUARD, x) == ("2 guard bytes before the start of `y` were overwritten (bytes 0..1 before it) "
                                    "(the kernel allocated it with torch.empty: (4, 7) float16)")
    scratch = F.AllocatedFacts(op="empty_like", shape=[16], dtype="float32", returned=False)
    y = F.GuardFacts(itemsize=4, n_after=4, n_before=0, after_lo=0, after_hi=3, allocated=scratch)
    assert _say(Check.GUARD, y) == ("4 guard bytes after the end of the kernel's scratch allocation torch.empty_like "
                                    "(16,) float32 were overwritten (bytes 0..3 past the end: elements 0..0 past the "
                                    "last)")


# ---------------------------------------------------------------------------- input changed
def test_an_input_resized():
    x = F.InputChangedFacts(how="meta", resized=[[4, 8], [8, 4]])
    assert _say(Check.INPUT_CHANGED, x, output="x") == ("the kernel changed its input `x` from shape (4, 8) to (8, 4), "
                                                        "or its dtype; the spec declares no mutation")


def test_an_input_written_by_elements_with_its_pattern_and_gap_bytes():
    x = F.InputChangedFacts(how="elements", gap_bytes=4096)
    text = _say(Check.INPUT_CHANGED, x, output="x", mismatched=1234, total=4096, pattern=Pattern(kind="every"))
    assert text.startswith("the kernel changed its input `x`: 1,234 of 4,096 elements (every element) and 4,096 bytes "
                           "between its elements (memory a strided view's parent owns) differ from what it was passed; "
                           "the spec declares no mutation (kl.Tensor(..., mutated=True) if the kernel writes it by design")


def test_an_input_hashed_by_rows_and_its_slabs():
    x = F.InputChangedFacts(how="hash", slabs=3, of=64)
    text = _say(Check.INPUT_CHANGED, x, output="x", mismatched=12, total=1 << 20)
    assert text.startswith("the kernel changed its input `x`: 12 of 1,048,576 rows differ from what it was passed; 3 "
                           "of 64 slabs of rows hashed before the call differ after it; the spec declares no mutation")


def test_an_upstream_gradient_overwritten_names_its_own_fix():
    x = F.InputChangedFacts(how="elements", upstream=True)
    assert _say(Check.INPUT_CHANGED, x, output="dy", mismatched=1, total=2).endswith(
        "(kl.Tensor(..., grad_overwritten=True) on the output if the backward overwrites it by design)")


def test_a_declared_gradient_write_that_left_no_gradient():
    x = F.InputChangedFacts(how="elements", declared="gradient")
    assert _say(Check.INPUT_CHANGED, x, output="x", mismatched=5, total=8).startswith(
        "the kernel's backward wrote `x` as the spec declares, but 5 of 8 elements hold neither its data as passed nor "
        "a gradient")


# ---------------------------------------------------------------------------- invalid reference
def test_invalid_reference_names_what_it_shares():
    both = F.InvalidReferenceFacts(functions=["add", "mul"], gpu_kernels=["k"])
    assert _say(Check.INVALID_REFERENCE, both).startswith("the reference runs the kernel under test (functions add, "
                                                          "mul; GPU kernels k); a comparison with it cannot fail")
    only_gpu = F.InvalidReferenceFacts(gpu_kernels=["k"])
    assert _say(Check.INVALID_REFERENCE, only_gpu).startswith("the reference runs the kernel under test (GPU kernels k);")
