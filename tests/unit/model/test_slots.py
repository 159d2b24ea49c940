"""model/slots.py: each default slot against an independent oracle (torch's own ops), the decode
attention's cache contract (positions past a sequence's length never read), and resolve()."""
import math

import pytest
import torch

from kladder.model import slots


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def sdpa_gqa(q, k, v, causal):
    """torch's scaled_dot_product_attention with each kv head repeated for its query heads."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def test_rmsnorm_is_torch_s_rms_norm_computed_in_float32_and_returned_in_x_s_dtype():
    x = torch.randn(5, 16, generator=g()).bfloat16()
    w = torch.randn(16, generator=g(1))
    got = slots.rmsnorm(x, w, 1e-5)
    want = torch.nn.functional.rms_norm(x.float(), (16,), w, 1e-5).bfloat16()
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


def test_rmsnorm_of_a_zero_row_is_zero_thanks_to_eps():
    assert torch.equal(slots.rmsnorm(torch.zeros(2, 4), torch.ones(4), 1e-6), torch.zeros(2, 4))


def test_linear_activation_and_softmax():
    x, w = torch.randn(3, 4, generator=g()), torch.randn(5, 4, generator=g(1))
    assert torch.allclose(slots.linear(x, w), torch.nn.functional.linear(x, w))
    assert slots.activation(torch.tensor([0.0, 1.0])).tolist() == pytest.approx([0.0, 0.5 * (1 + math.erf(1 / math.sqrt(2)))])
    s = slots.softmax(torch.tensor([[0.0, -math.inf, 0.0]]))
    assert s.tolist() == [[0.5, 0.0, 0.5]]


@pytest.mark.parametrize("hq,hkv", [(4, 1), (4, 2), (2, 2)])
def test_prefill_is_causal_grouped_query_attention(hq, hkv):
    q = torch.randn(2, hq, 5, 8, generator=g())
    k, v = torch.randn(2, hkv, 5, 8, generator=g(1)), torch.randn(2, hkv, 5, 8, generator=g(2))
    got = slots.attention_prefill(q, k, v)
    assert got.shape == q.shape and torch.allclose(got, sdpa_gqa(q, k, v, True), atol=1e-5)


def test_prefill_returns_the_query_s_dtype():
    q = torch.randn(1, 2, 3, 4, generator=g()).bfloat16()
    kv = torch.randn(1, 1, 3, 4, generator=g(1)).bfloat16()
    assert slots.attention_prefill(q, kv, kv).dtype == torch.bfloat16


def test_decode_reads_only_positions_below_each_length_even_when_the_rest_is_nan():
    B, Hq, Hkv, S, D = 3, 4, 2, 6, 8
    q = torch.randn(B, Hq, D, generator=g())
    k, v = torch.randn(B, Hkv, S, D, generator=g(1)), torch.randn(B, Hkv, S, D, generator=g(2))
    lengths = torch.tensor([1, 4, 6], dtype=torch.int32)
    poisoned_k, poisoned_v = k.clone(), v.clone()
    for b, n in enumerate(lengths.tolist()):
        poisoned_k[b, :, n:] = math.nan
        poisoned_v[b, :, n:] = math.nan
    got = slots.attention_decode(q, poisoned_k, poisoned_v, lengths)
    assert torch.isfinite(got).all()
    for b, n in enumerate(lengths.tolist()):
        want = sdpa_gqa(q[b:b + 1, :, None], k[b:b + 1, :, :n], v[b:b + 1, :, :n], False)[:, :, 0]
        assert torch.allclose(got[b:b + 1], want, atol=1e-5)
    assert torch.allclose(got[0], v[0, :, 0].repeat_interleave(2, 0))      # one position: its value, for every head


def test_decode_of_the_last_token_is_prefill_s_last_row():
    q = torch.randn(1, 4, 5, 8, generator=g())
    k, v = torch.randn(1, 2, 5, 8, generator=g(1)), torch.randn(1, 2, 5, 8, generator=g(2))
    full = slots.attention_prefill(q, k, v)
    step = slots.attention_decode(q[:, :, -1].contiguous(), k, v, torch.tensor([5], dtype=torch.int32))
    assert torch.allclose(step, full[:, :, -1], atol=1e-6)


def test_resolve_without_slots_is_the_defaults():
    table = slots.resolve(None)
    assert set(table) == set(slots.SLOTS) and table["rmsnorm"] is slots.rmsnorm


def test_resolve_refuses_an_unknown_slot_and_a_non_callable_with_the_signature():
    with pytest.raises(KeyError, match=r"unknown slot\(s\) \['layernorm'\]: the model's slots are rmsnorm, linear"):
        slots.resolve({"layernorm": slots.rmsnorm})
    with pytest.raises(TypeError, match=r"slot 'linear': got 3; give a callable with the signature linear\(x \[T, K\]"):
        slots.resolve({"linear": 3})


def test_a_replaced_softmax_reaches_both_default_attentions_and_not_a_replaced_one():
    calls = []

    def counted(x):
        calls.append(x.shape)
        return torch.softmax(x, -1)
    table = slots.resolve({"softmax": counted})
    q, kv = torch.randn(1, 2, 3, 4, generator=g()), torch.randn(1, 1, 3, 4, generator=g(1))
    table["attention_prefill"](q, kv, kv)
    table["attention_decode"](q[:, :, 0].contiguous(), kv, kv, torch.tensor([2], dtype=torch.int32))
    assert calls == [(6, 3), (2, 3)]                                   # [R, S]: 2 heads x 3 queries, then 2 heads x 1
    own = slots.resolve({"softmax": counted, "attention_prefill": slots.attention_prefill})
    assert own["attention_prefill"] is slots.attention_prefill


def test_a_default_patched_in_the_module_reaches_resolve(monkeypatch):
    def mine(x, w, eps):
        return x
    monkeypatch.setattr(slots, "rmsnorm", mine)
    assert slots.resolve(None)["rmsnorm"] is mine
