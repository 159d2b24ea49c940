"""checks/fast.py: when the fused GPU pass runs (`applies`), decided on the CPU with a small
stand-in for a CUDA tensor (only the attributes `applies` reads). `counts` launches kladder's
Triton kernel: it needs a GPU or Triton's interpreter, and tests/test_compare.py runs it under the
interpreter against the exact comparison; it is not run here."""
import torch

from kladder.checks import fast, values


class _Cuda:
    """What `applies` reads of a CUDA tensor: is_cuda, dtype, shape, dim(), numel()."""
    is_cuda = True

    def __init__(self, shape, dtype=torch.float32):
        self.shape, self.dtype = torch.Size(shape), dtype

    def dim(self):
        return len(self.shape)

    def numel(self):
        return self.shape.numel()


def test_it_runs_on_cuda_with_the_references_copy_in_the_outputs_dtype():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        assert fast.applies(_Cuda((8, 4096), dtype), _Cuda((8, 4096), dtype))
    assert fast.applies(_Cuda((5,)), _Cuda((5,)))                            # one row


def test_it_never_runs_on_the_cpu_or_without_the_rounded_reference():
    out = torch.zeros(4, 8)
    assert not fast.applies(out, out.clone())
    assert not fast.applies(_Cuda((4, 8)), None)


def test_it_leaves_float64_integers_and_a_reference_of_another_dtype_to_the_exact_path():
    assert not fast.applies(_Cuda((4, 8), torch.float64), _Cuda((4, 8), torch.float64))
    assert not fast.applies(_Cuda((4, 8), torch.int32), _Cuda((4, 8), torch.int32))
    assert not fast.applies(_Cuda((4, 8), torch.bfloat16), _Cuda((4, 8), torch.float32))


def test_scalars_empty_outputs_other_shapes_and_rows_past_max_cols_are_not_its():
    assert not fast.applies(_Cuda(()), _Cuda(()))
    assert not fast.applies(_Cuda((0, 8)), _Cuda((0, 8)))
    assert not fast.applies(_Cuda((4, 8)), _Cuda((8, 4)))
    assert fast.applies(_Cuda((2, fast.MAX_COLS)), _Cuda((2, fast.MAX_COLS)))
    assert not fast.applies(_Cuda((2, fast.MAX_COLS + 1)), _Cuda((2, fast.MAX_COLS + 1)))


def test_without_triton_installed_it_does_not_run(monkeypatch):
    real = fast.importlib.util.find_spec
    monkeypatch.setattr(fast.importlib.util, "find_spec", lambda name: None if name == "triton" else real(name))
    assert not fast.applies(_Cuda((4, 8)), _Cuda((4, 8)))


def test_its_doubt_margin_is_the_exact_comparisons():
    # an element the fast pass calls sure must be one the float32 slab verdict would decide too
    assert fast.MARGIN == values.MARGIN
