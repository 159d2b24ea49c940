"""model/net.py: a tiny model built from its config: parameters and their dtypes, every slot's
output checked, generation through the KV cache equal to whole-sequence forward, weights on disk."""
import json

import pytest
import torch

from kladder.model import net, slots
from kladder.model.net import Config, Model, SlotError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


TINY = Config(vocab=12, max_len=8, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=4, d_ff=32)


def model(table=None, dtype=torch.float32, seed=0):
    params = net.init_params(TINY, torch.Generator().manual_seed(seed))
    return Model(TINY, net.cast_params(params, dtype, "cpu"), slots.resolve(table))


def test_the_default_config_is_group_16_and_the_tiny_one_group_2():
    assert Config().group == 16 and TINY.group == 2


def test_init_params_shapes_are_seeded_and_the_norms_start_at_one():
    p = net.init_params(TINY, torch.Generator().manual_seed(0))
    assert p["l1.wq"].shape == (16, 16) and p["l1.wk"].shape == (8, 16) and p["l0.down"].shape == (16, 32)
    assert p["tok_emb"].shape == (12, 16) and p["pos_emb"].shape == (8, 16) and p["lm_head"].shape == (12, 16)
    assert (p["l0.attn_norm"] == 1).all() and (p["norm_f"] == 1).all()
    assert len(p) == 4 + 8 * TINY.n_layers
    again = net.init_params(TINY, torch.Generator().manual_seed(0))
    assert all(torch.equal(p[k], again[k]) for k in p)


def test_cast_params_keeps_the_norm_weights_float32():
    p = net.cast_params(net.init_params(TINY, torch.Generator()), torch.bfloat16, "cpu")
    assert {k for k, v in p.items() if v.dtype == torch.float32} == {"norm_f", "l0.attn_norm", "l0.mlp_norm",
                                                                       "l1.attn_norm", "l1.mlp_norm"}
    assert net.is_norm("norm_f") and net.is_norm("l3.mlp_norm") and not net.is_norm("l0.wo")


def test_forward_gives_logits_per_position():
    tokens = torch.randint(0, 12, (3, 5), generator=torch.Generator().manual_seed(1))
    assert model().forward(tokens).shape == (3, 5, 12)


def test_generation_through_the_cache_equals_the_whole_sequence_s_forward():
    m = model()
    prompt = torch.randint(0, 12, (2, 4), generator=torch.Generator().manual_seed(2))
    forced = torch.randint(0, 10, (2, 3), generator=torch.Generator().manual_seed(3))
    toks, logits = m.generate(prompt, 3, forced=forced)
    whole = m.forward(torch.cat([prompt, forced[:, :2]], 1))[:, 3:]       # the prompt's last position, then each fed token
    assert logits.shape == (2, 3, 12) and torch.allclose(logits, whole, atol=1e-5)
    assert torch.equal(toks, logits.argmax(-1))


def test_free_generation_feeds_back_its_own_greedy_tokens():
    m = model()
    prompt = torch.randint(0, 12, (2, 3), generator=torch.Generator().manual_seed(4))
    toks, _ = m.generate(prompt, 4)
    _, forced_logits = m.generate(prompt, 4, forced=toks)
    assert torch.equal(forced_logits.argmax(-1), toks)


def test_a_slot_that_returns_the_wrong_shape_dtype_or_type_is_named():
    prompt = torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(SlotError, match=r"slot 'linear' returned torch.float32 \[3, 1\] where torch.float32 \[3, 16\]"):
        model({"linear": lambda x, w: x[:, :1]}).forward(prompt)
    with pytest.raises(SlotError, match="slot 'activation' returned float where"):
        model({"activation": lambda x: 1.0}).forward(prompt)
    with pytest.raises(SlotError, match=r"slot 'attention_prefill' returned torch.float64"):
        model({"attention_prefill": lambda q, k, v: q.double()}).forward(prompt)


def test_the_slots_see_two_d_rows():
    shapes = []

    def spy(x, w, eps):
        shapes.append(tuple(x.shape))
        return slots.rmsnorm(x, w, eps)
    model({"rmsnorm": spy}).forward(torch.zeros(2, 3, dtype=torch.long))
    assert set(shapes) == {(6, 16)} and len(shapes) == 2 * TINY.n_layers + 1


def test_weights_round_trip_through_safetensors_with_the_config(tmp_path):
    params = net.init_params(TINY, torch.Generator().manual_seed(0))
    path = str(tmp_path / "tiny.safetensors")
    net.save_model(TINY, {k: v.bfloat16() for k, v in params.items()}, path)      # saved as float32
    cfg, back = net.load_model(path)
    assert cfg == TINY and back.keys() == params.keys()
    assert all(v.dtype == torch.float32 for v in back.values())
    assert torch.equal(back["l0.wq"], params["l0.wq"].bfloat16().float())
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        assert json.loads(f.metadata()["config"])["n_kv_heads"] == 2
