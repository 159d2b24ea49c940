"""kladder.core.sizes: tensor sizes at a point, the 2^31/2^32 cliffs, the budgets, measured peaks."""
import types

import pytest

import kladder as kl
from kladder.core import sizes
from kladder.core.sizes import (CPU_BUDGET, GPU_BUDGET, MEASURE_MIN_BYTES, MODERATE_ELEMENTS, Budget, Peak, as_rows,
                                budget_for, cheap, dtype_of, fits, host_need, human_bytes, is_big, moderate, nbytes_of,
                                numel_of, output_cliffs, output_rows, repetition, shape_of, total_bytes)


def _k(a, b):
    return a


SPEC = kl.Spec("g", kernel=_k, reference=_k,
               args={"a": kl.Tensor("M K", dtype=["bfloat16", "float32"]), "b": kl.Tensor("K G*N", like="a")},
               returns=kl.Tensor("M 4", dtype="float32"),
               dims={"M": kl.Dim(1, 8), "K": kl.Dim(1, 8), "N": kl.Dim(1, 8), "G": kl.Dim(1, 4)})
AT = {"M": 3, "K": 5, "N": 2, "G": 3}


# ---------------------------------------------------------------------------- sizes
def test_shapes_take_literals_dims_and_products():
    assert shape_of(SPEC, "a", AT) == (3, 5)
    assert shape_of(SPEC, "b", AT) == (5, 6)               # G*N
    assert shape_of(SPEC, "out", AT) == (3, 4)             # a literal


def test_a_like_tensor_follows_its_models_chosen_dtype_or_its_first():
    assert dtype_of(SPEC, "b", {"a": "float32"}) == "float32"
    assert dtype_of(SPEC, "b", {}) == "bfloat16"
    assert dtype_of(SPEC, "out", {"a": "bfloat16"}) == "float32"


def test_bytes_and_elements():
    assert numel_of(SPEC, "b", AT) == 30
    assert nbytes_of(SPEC, "b", AT, {"a": "float32"}) == 120
    assert total_bytes(SPEC, AT, {}) == 15 * 2 + 30 * 2 + 12 * 4
    assert sizes.elements_of(SPEC, AT) == 15 + 30 + 12


def test_output_rows_are_every_dim_but_the_last_of_the_biggest_output():
    assert output_rows(SPEC, AT) == 3
    scalar = types.SimpleNamespace(outputs={}, all_tensors={})
    assert output_rows(scalar, {}) == 1                   # no output: one program


# ---------------------------------------------------------------------------- cliffs
@pytest.mark.parametrize("shape,dtype,want", [
    ((), "float32", []), (None, "float32", []), ((4,), "complex64", []),     # unknown dtype: no cliff claimed
    ((1 << 29,), "float32", []),                                             # 2^31 bytes exactly: the last offset is 2^31 - 1
    ((1 << 29) + 1, "float32", [[31, "bytes", 1 << 29]]),
    ((1 << 31,), "int8", []),
    ((1 << 31) + 1, "int8", [[31, "bytes", 1 << 31], [31, "elements", 1 << 31]]),
    ((1 << 16, 1 << 16), "float16", [[31, "bytes", 1 << 30], [32, "bytes", 1 << 31], [31, "elements", 1 << 31]]),
    ((3, 1 << 30), "float64", [[31, "bytes", 1 << 28], [32, "bytes", 1 << 29], [31, "elements", 1 << 31]]),
])
def test_output_cliffs(shape, dtype, want):
    if isinstance(shape, int):
        shape = (shape,)
    assert output_cliffs(shape, dtype) == want


# ---------------------------------------------------------------------------- as_rows
def test_as_rows():
    import torch
    assert as_rows(torch.tensor(3.0)).shape == (1, 1)
    assert as_rows(torch.zeros(5)).shape == (1, 5)
    assert as_rows(torch.zeros(2, 3, 4)).shape == (6, 4)
    assert as_rows(torch.zeros(0, 7)).shape == (0, 7)
    assert as_rows(torch.zeros(3, 0)).shape == (0, 1)          # an empty last dim keeps one column
    assert as_rows(torch.zeros(0)).shape == (0, 1)


# ---------------------------------------------------------------------------- words
@pytest.mark.parametrize("n,text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (1536, "1.50 KiB"),
                                    (1 << 20, "1.00 MiB"), (5 << 30, "5.00 GiB"), (1 << 40, "1024.00 GiB"),
                                    ((1 << 30) - 1, "1.00 GiB"), ((1 << 20) - 1, "1.00 MiB"),
                                    ((1 << 20) - 5243, "1018.88 KiB"), ((1 << 20) - 5242, "1.00 MiB")])
def test_human_bytes(n, text):
    assert human_bytes(n) == text


def test_a_budgets_text_says_the_interpreters_time_only_on_the_cpu():
    assert CPU_BUDGET.text() == "65,536 elements per tensor, 4,096 rows per output (about 20 s of interpreter time)"
    assert GPU_BUDGET.text() == "134,217,728 elements per tensor, 2,147,483,648 rows per output"


# ---------------------------------------------------------------------------- budgets
def test_budget_for_and_fits_at_its_edge():
    assert budget_for("cpu") is CPU_BUDGET and budget_for("cuda") is GPU_BUDGET and budget_for("rocm") is GPU_BUDGET
    assert CPU_BUDGET.fits(1 << 16) and not CPU_BUDGET.fits((1 << 16) + 1)


def test_moderate_caps_elements_and_rows_and_keeps_the_rest():
    m = moderate(GPU_BUDGET)
    assert (m.max_elements, m.max_rows, m.device, m.pair_rows) == (MODERATE_ELEMENTS, 1 << 16, "cuda", None)
    assert moderate(CPU_BUDGET) == CPU_BUDGET                  # already under both caps


def test_repetitions_budget_on_the_cpu_is_two_rows_and_on_the_gpu_the_moderate_one():
    r = repetition(CPU_BUDGET)
    assert (r.max_elements, r.max_rows, r.device, r.pair_rows) == (1 << 13, 2, "cpu", None)
    assert repetition(GPU_BUDGET) == moderate(GPU_BUDGET)


def test_fits_bounds_every_tensor_and_every_outputs_rows():
    row = kl.Spec("r", kernel=_k, reference=_k, args={"a": kl.Tensor("M K", dtype="float32"), "b": kl.Tensor("K", like="a")},
                  returns=kl.Tensor("M K", like="a"), dims={"M": kl.Dim(1, 1 << 20), "K": kl.Dim(1, 1 << 20)})
    b = Budget(max_elements=100, max_rows=10, device="cpu", pair_rows=4)
    assert fits(row, {"M": 10, "K": 10}, b)
    assert not fits(row, {"M": 11, "K": 9}, b)                 # 99 elements, but 11 rows
    assert not fits(row, {"M": 1, "K": 101}, b)                # 1 row, but 101 elements
    assert cheap(row, {"M": 4, "K": 10}, b) and not cheap(row, {"M": 5, "K": 10}, b)
    assert cheap(row, {"M": 10, "K": 10}, Budget(100, 10, "cpu"))        # no pair_rows: fits is cheap
    assert not is_big(row, {"M": 1 << 13, "K": 1 << 14})                 # 2^27 elements: the GPU budget's own
    assert is_big(row, {"M": 1 << 13, "K": (1 << 14) + 1})


# ---------------------------------------------------------------------------- measured peaks
PEAK = Peak("p", elements=1000, host={"inputs": 100, "reference": 4000, "checks": 50},
            device={"inputs": 2000, "kernel": 3000, "reference": 1000})


def test_a_peak_scales_the_largest_of_its_stages():
    assert PEAK.scaled(2000, sizes.KERNEL_STAGES) == 6000
    assert PEAK.scaled(500, sizes.REFERENCE_STAGES, "host") == 2000
    assert PEAK.scaled(1000, ("nothing",)) == 0
    assert PEAK.bytes == 4000
    assert Peak("p", 0, {}, {}).bytes == 0 and Peak("p", 0, {"x": 8}, {}).scaled(3, ("x",), "host") == 24   # 0 elements: no divide by 0


def test_host_need_on_the_cpu_is_every_stage_on_the_host():
    at = {"M": 3, "K": 5, "N": 2, "G": 3}                      # 57 elements
    n = sizes.elements_of(SPEC, at)
    assert host_need(PEAK, SPEC, at, "cpu", None) == int(4000 * n / 1000)


def test_host_need_on_cuda_adds_the_reference_where_the_device_cannot_hold_it():
    at = {"M": 8, "K": 8, "N": 8, "G": 4}
    n = sizes.elements_of(SPEC, at)                           # 64 + 256 + 32 = 352
    kernel, reference = int(3000 * n / 1000), int(1000 * n / 1000)
    host_ref = int(4000 * n / 1000)
    assert host_need(PEAK, SPEC, at, "cuda", None) == host_ref                 # free unknown: it fits
    assert host_need(PEAK, SPEC, at, "cuda", kernel + reference) == host_ref   # exactly fits
    assert host_need(PEAK, SPEC, at, "cuda", kernel + reference - 1) == reference + host_ref


def test_peak_of_keeps_what_the_worker_measured_by_stage():
    point = types.SimpleNamespace(id="pt", sizes={"M": 1 << 12, "K": 1 << 10, "N": 1, "G": 1}, dtype_of={"a": "float32"})
    assert total_bytes(SPEC, point.sizes, point.dtype_of) >= MEASURE_MIN_BYTES
    p = sizes.peak_of(SPEC, point, {"inputs": (10, 20), "reference": (None, None), "checks": (5, None)})
    assert p.host == {"inputs": 10, "reference": 0, "checks": 5} and p.device == {"inputs": 20}
    assert p.point == "pt" and p.elements == sizes.elements_of(SPEC, point.sizes)
    assert sizes.peak_of(SPEC, point, {}) is None and sizes.peak_of(SPEC, point, None) is None
