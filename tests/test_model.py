"""Rung 8's model: the shipped weights, the generation path, the slots, the adapter, and the
MiniLM demo. Fast: every model here is a few hundred thousand parameters on the CPU."""
import pathlib
import json
import os

import pytest
import torch

import kladder.model as km
from kladder.model import minilm, net, slots, task


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_weights_load_as_a_group_16_model():
    model = km.load()
    cfg = model.cfg
    assert (cfg.n_heads, cfg.n_kv_heads, cfg.group) == (16, 1, 16)
    from safetensors import safe_open
    with safe_open(km.WEIGHTS, framework="pt") as f:
        meta, params = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open is not iterable
    assert json.loads(meta["config"])["n_heads"] == 16
    assert all(v.dtype == torch.float32 for v in params.values())
    assert os.path.getsize(km.WEIGHTS) < 8 << 20
    record = json.loads(pathlib.Path(km.RECORD).read_text())
    assert record["held_out_exact_match"] >= 0.95 and record["seed"] == 0 and record["steps"] > 0


def test_model_round_trips_through_safetensors(tmp_path):
    cfg, params = net.load_model(km.WEIGHTS)
    net.save_model(cfg, params, str(tmp_path / "m.safetensors"))
    cfg2, back = net.load_model(str(tmp_path / "m.safetensors"))
    assert cfg2 == cfg and back.keys() == params.keys() and all(torch.equal(back[k], params[k]) for k in params)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_default_slots_score_at_least_95_percent(dtype):
    got = km.evaluate(n=64, dtype=dtype)
    assert got.score >= 0.95, got.samples
    assert got.n == 64 and len(got.samples) == km.SHOWN_SAMPLES
    prompt, want, answer = got.samples[0]
    a, b = prompt.rstrip("=").split("+")
    assert int(want) == int(a) + int(b) and prompt.endswith("=")


def test_the_problem_set_is_fixed_by_the_seed():
    assert km.evaluate(n=8, seed=3).samples == km.evaluate(n=8, seed=3).samples
    assert km.evaluate(n=8, seed=3).samples != km.evaluate(n=8, seed=4).samples


def test_scored_problems_are_held_out_of_training():
    probs = task.sample(256, 5, torch.Generator().manual_seed(0), "held_out")
    assert bool(task.held_out(probs.a, probs.b).all())
    train = task.sample(256, 5, torch.Generator().manual_seed(0), "train")
    assert not bool(task.held_out(train.a, train.b).any())


def counting(fn, calls):
    def counted(*args):
        calls.append(args)
        return fn(*args)
    return counted


def test_generation_prefills_once_then_runs_attention_decode_per_token():
    prefill, decode = [], []
    got = km.evaluate({"attention_prefill": counting(slots.attention_prefill, prefill),
                       "attention_decode": counting(slots.attention_decode, decode)}, n=8)
    cfg = km.load().cfg
    answer_len = (cfg.max_len - 2) // 3 + 1
    assert got.score == 1.0
    # one generation: every answer right, so the teacher-forced run for the NLL is the greedy one
    assert len(prefill) == cfg.n_layers
    assert len(decode) == cfg.n_layers * (answer_len - 1)
    q, k_cache, v_cache, lengths = decode[-1]
    assert q.shape == (8, 16, cfg.head_dim) and k_cache.shape[1] == 1
    assert lengths.dtype == torch.int32 and int(lengths[0]) == k_cache.shape[2] - 1


def test_every_slot_is_called_with_its_documented_dtypes():
    seen = {}

    def spy(name):
        def wrapped(*args):
            seen.setdefault(name, [a.dtype for a in args if isinstance(a, torch.Tensor)])
            return slots.resolve(None)[name](*args)
        return wrapped
    km.evaluate({name: spy(name) for name in km.SLOTS}, n=4, dtype="bfloat16")
    bf, f32 = torch.bfloat16, torch.float32
    # the default attentions are replaced here, so softmax is not called
    assert seen == {"rmsnorm": [bf, f32], "linear": [bf, bf], "activation": [bf],
                    "attention_prefill": [bf, bf, bf], "attention_decode": [bf, bf, bf, torch.int32]}


def test_a_replaced_softmax_reaches_the_default_attentions():
    calls = []
    got = km.evaluate({"softmax": counting(slots.softmax, calls)}, n=4)
    # every answer right: one generation (its teacher-forced twin is the same run) x 4 layers x
    # (1 prefill + 5 decode steps)
    assert got.score == 1.0 and len(calls) == 4 * 6


def test_the_teacher_forced_run_is_reused_only_where_it_is_the_same_run(monkeypatch):
    # a free run fed the right token at every step is the forced run op for op: its likelihood
    # and drift are the ones a second, forced generation gives; a run that went wrong is re-run forced
    lean = {"rmsnorm": lambda x, w, eps: (slots.rmsnorm(x.float(), w, eps) * 0.99).to(x.dtype)}
    reused = km.evaluate(lean, n=8, dtype="bfloat16")
    real = net.Model.generate

    def never_reuse(self, prompt, n_new, forced=None):
        toks, logits = real(self, prompt, n_new, forced)
        return (toks if forced is not None else toks + 1000), logits     # a free run that looks wrong
    monkeypatch.setattr(net.Model, "generate", never_reuse)
    rerun = km.evaluate(lean, n=8, dtype="bfloat16")
    assert reused.score == 1.0 and rerun.score == 0.0
    assert (reused.nll, reused.drift, reused.gain) == (rerun.nll, rerun.drift, rerun.gain)
    gens = []
    monkeypatch.setattr(net.Model, "generate", lambda self, p, n, forced=None: gens.append(forced is None) or
                        real(self, p, n, forced))
    km.evaluate({"rmsnorm": lambda x, w, eps: torch.zeros_like(x)}, n=8)
    assert gens[:2] == [True, False]                                       # wrong answers: a forced run of its own


def test_a_broken_slot_drops_the_score():
    got = km.evaluate({"rmsnorm": lambda x, w, eps: torch.zeros_like(x)}, n=32)
    assert got.score < 0.2
    assert got.drift > 0.1


def test_a_slot_returning_the_wrong_dtype_is_named():
    with pytest.raises(net.SlotError, match="slot 'rmsnorm' returned torch.float32"):
        km.evaluate({"rmsnorm": lambda x, w, eps: slots.rmsnorm(x, w, eps).float()}, n=2, dtype="bfloat16")


def test_unknown_slot_and_bad_dtype_are_refused():
    with pytest.raises(KeyError, match="unknown slot"):
        km.evaluate({"layernorm": slots.rmsnorm})
    with pytest.raises(ValueError, match="float16"):
        km.evaluate(dtype="float16")


def test_a_leaning_rmsnorm_shows_as_logit_gain_not_as_score():
    # every norm's output 1% small: within bfloat16's tolerance, and the answers do not move
    got = km.evaluate({"rmsnorm": lambda x, w, eps: (slots.rmsnorm(x.float(), w, eps) * 0.99).to(x.dtype)},
                      n=16, dtype="bfloat16")
    assert got.score == 1.0
    assert got.gain < -0.005


# ---------------------------------------------------------------- the adapter
class Base:
    def hello(self):
        return "base"


class Child(Base):
    pass


def shout(text):
    return text.upper()


def test_adapter_patches_a_function_and_restores_it():
    import test_model as me   # the adapter imports the target by name, as it would a user's module
    original = me.shout
    adapter = km.Adapter("test_model:shout", lambda: (1.0 if me.shout("a") == "A" else 0.0, [me.shout("b")]))
    assert adapter.score() == 1.0 and adapter.samples == ["B"]
    assert adapter.score(lambda text: text) == 0.0 and adapter.samples == ["b"]
    assert me.shout is original


def test_adapter_restores_after_an_error_and_removes_an_inherited_method_again():
    import test_model as me

    def boom():
        raise RuntimeError("evaluation failed")
    adapter = km.Adapter("test_model:Child.hello", boom)
    with pytest.raises(RuntimeError):
        adapter.score(lambda self: "patched")
    assert "hello" not in vars(me.Child) and me.Child().hello() == "base"
    assert km.Adapter("test_model:Child.hello", lambda: float(me.Child().hello() == "patched")).score(
        lambda self: "patched") == 1.0
    assert me.Child().hello() == "base"


def test_adapter_refuses_a_bad_target():
    with pytest.raises(km.TargetError, match="package.module:function"):
        km.Adapter("no_colon_here", lambda: 1.0)
    with pytest.raises(km.TargetError, match="has no attribute"):
        km.Adapter("test_model:Child.nope", lambda: 1.0)


# ---------------------------------------------------------------- MiniLM, the user's model
needs_minilm = pytest.mark.skipif(minilm.available() is not None, reason=str(minilm.available()))


@needs_minilm
def test_minilm_layernorm_correct_replacement_scores_one_and_broken_scores_less():
    def layer_norm(x, w, b, eps):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)

    def no_bias(x, w, b, eps):      # forgets the bias: every LayerNorm's output shifted
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, None, eps)
    original = torch.nn.LayerNorm.forward
    assert minilm.score_layernorm(layer_norm) > 0.9999
    assert torch.nn.LayerNorm.forward is original
    assert minilm.score_layernorm(no_bias) < 0.9


@needs_minilm
def test_minilm_softmax_replacement():
    assert minilm.score_softmax(lambda x: torch.softmax(x, -1)) > 0.9999
    assert minilm.score_softmax(lambda x: torch.softmax(0.5 * x, -1)) < 0.999
    assert torch.nn.functional.softmax.__module__ == "torch.nn.functional"


# ---------------------------------------------------------------- the rung-8 zoo cases, small
def test_decode_group16_collapses_the_model_and_its_twin_does_not():
    pytest.importorskip("triton")
    from kladder.zoo import decode_group16 as case
    assert case.SLOT == "attention_decode"
    assert km.evaluate({"attention_decode": case.attention_decode}, n=4).score == 0.0
    assert km.evaluate({"attention_decode": case.attention_decode_fixed}, n=4).score == 1.0


def test_compounding_bias_leans_the_logits_and_its_twin_does_not():
    pytest.importorskip("triton")
    from kladder.zoo import compounding_bias as case
    assert case.SLOT == "rmsnorm"
    bug = km.evaluate({"rmsnorm": case.rmsnorm}, n=4, dtype="bfloat16")
    twin = km.evaluate({"rmsnorm": case.rmsnorm_fixed}, n=4, dtype="bfloat16")
    assert bug.gain < -0.003 and abs(twin.gain) < 0.001
