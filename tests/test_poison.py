"""Rung 4 poisons every output before each graph replay (materialize.poison): a 0-dim integer
output (a count) too. On the H200 active_count_full_width's twin, whose count is a 0-dim int32,
was BROKEN at both graph points (`self.dim() cannot be 0 to view Int as Byte`;
docs/results/2026-12-02-h200-session7)."""
import pytest
import torch

from kladder.gen.materialize import poison, poison_word


@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "int8", "uint8", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(), (1,), (3, 5)])
def test_every_element_holds_the_poison_the_finding_names(dtype, shape):
    t = torch.zeros(shape, dtype=getattr(torch, dtype))
    poison(t, dtype)
    if t.is_floating_point():
        assert t.isnan().all()
    else:
        word = poison_word(dtype)
        assert (t == t.flatten()[0]).all() and t.flatten()[0].item() != 0
        assert str(t.flatten()[0].item()) in word or hex(t.flatten()[0].item() & 0xFF) in word.lower(), word
