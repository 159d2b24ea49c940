"""The zoo cases that need issue 21's declarations, on their own without kladder's climb: each
buggy kernel is wrong exactly where its mechanism bites (an expert with no token, an expert
past lane 255, the full-width expert count, a partial last chunk on the chunked path) and right
elsewhere; each twin is right at both.
Without CUDA the Triton kernels run in the interpreter.
"""
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.zoo import (active_count_full_width, embedding_chunk_tail, expert_wgrad_unwritten,  # noqa: E402
                         router_lanes_256)

# torch.empty returns NaN / the largest integer (as under kladder), inputs seeded: tests/conftest.py
pytestmark = pytest.mark.usefixtures("poisoned_empty")


# ---------------------------------------------------------------- expert_wgrad_unwritten
@pytest.mark.parametrize("ids, bites", [
    ("uniform", False),          # 512 tokens over 8 experts: every expert gets some
    ("last_unused", True),       # the last expert gets no token
    ("one_expert", True),        # every token to expert 3
])
def test_expert_wgrad_unwritten(ids, bites):
    m = expert_wgrad_unwritten
    T, K, N, E = 512, 5, 7, 8
    x, dy = torch.randn(T, K, device=DEVICE), torch.randn(T, N, device=DEVICE)
    expert_ids = {"uniform": torch.arange(T) % E, "last_unused": torch.arange(T) % (E - 1),
                  "one_expert": torch.full((T,), 3)}[ids].to(DEVICE)
    ref = m.moe_wgrad_ref(x.double(), dy.double(), expert_ids, E)
    torch.testing.assert_close(m.moe_wgrad_fixed(x, dy, expert_ids, E).double(), ref, rtol=1e-5, atol=1e-4)
    out = m.moe_wgrad(x, dy, expert_ids, E)
    empty = torch.bincount(expert_ids, minlength=E) == 0
    assert bool(empty.any()) == bites
    assert torch.isnan(out[empty]).all()                          # never written
    torch.testing.assert_close(out[~empty].double(), ref[~empty], rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------- router_lanes_256
@pytest.mark.parametrize("E", [8, 128, 256, 512])
def test_router_lanes_256(E):
    m = router_lanes_256
    logits = torch.randn(20, E, device=DEVICE)
    ids_ref, w_ref = m.gate_topk_ref(logits, m.TOPK)
    ids, w = m.gate_topk_fixed(logits)
    assert torch.equal(ids.cpu(), ids_ref.cpu())
    torch.testing.assert_close(w, w_ref)
    ids, w = m.gate_topk(logits)
    assert bool((ids.cpu() < 256).all())                          # never an expert past lane 255
    wrong = (ids.cpu() != ids_ref.cpu()).any(-1)
    assert bool(wrong.any()) == (E > 256)
    assert not bool(wrong[~(ids_ref.cpu() >= 256).any(-1)].any())  # tokens whose top 8 sit below 256: right


def test_router_lanes_256_refuses_unspecialized_counts():
    with pytest.raises(ValueError, match="no gating specialization for 60 experts"):
        router_lanes_256.gate_topk_fixed(torch.randn(4, 60, device=DEVICE))


# ---------------------------------------------------------------- active_count_full_width
@pytest.mark.parametrize("E", [8, 64, 128, 256])
def test_active_count_full_width(E):
    m = active_count_full_width
    logits = torch.randn(3, E, device=DEVICE)
    ref = m.route_active_ref(logits)
    for got in (m.route_active_fixed(logits), m.route_active(logits)[:2]):
        assert all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(got, ref[:len(got)], strict=True))   # ids, used (, n_active)
    n = m.route_active(logits)[2]
    assert (int(n) == int(ref[2])) == (E < 256)
    if E == 256:
        assert int(n) == torch.iinfo(torch.int32).max             # torch.empty's fill: never written


# ---------------------------------------------------------------- embedding_chunk_tail
@pytest.mark.parametrize("D, bites", [(2049, False), (8192, False), (8193, True), (14337, True), (16383, True),
                                      (16384, False)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_embedding_chunk_tail(D, bites, dtype):
    """Wrong exactly on the chunked path (D > 8192) with a partial last chunk."""
    m = embedding_chunk_tail
    weight = torch.randn(5, D, device=DEVICE).to(dtype)
    ids = torch.tensor([4, 0, 4], device=DEVICE)
    ref = m.embedding_ref(ids, weight)
    assert torch.equal(m.embedding_fixed(ids, weight), ref)
    out = m.embedding(ids, weight)
    assert (not torch.equal(out, ref)) == bites
    if bites:
        chunks = -(-D // m.CHUNK)
        n = D // chunks                                           # what the reader copies of each chunk
        lane = torch.arange(D, device=DEVICE) % m.CHUNK
        assert torch.equal(out[:, lane < n], ref[:, lane < n])
        assert torch.isnan(out[:, lane >= n]).all()               # the staging buffer's NaN


def test_embedding_chunk_tail_is_caught_only_by_rung_1s_top_tails(monkeypatch):
    """The model widths, their neighbours, the low tails and the maximum all pass; the top tails
    (16383, 14337) fail (asserted on the zoo's own climb of the case, tests/test_zoo.py's
    test_caught_exactly_where_the_mechanism_bites, batch r1c: not climbed again here), and
    without them (rung 1 before issue 21) rung 1 passes."""
    from kladder.gen.gaps import shapes
    from kladder.climbing.ladder import rung_points
    from kladder.run.trial import run_point
    from kladder.core.sizes import CPU_BUDGET

    def rung1(spec):
        return [run_point(spec, p, "cpu").outcome for p in rung_points(spec, 1, CPU_BUDGET) if p.needs != "cuda"]

    m = embedding_chunk_tail
    assert {16383, 14337} <= {p.sizes["D"] for p in rung_points(m.spec, 1, CPU_BUDGET) if p.needs != "cuda"}
    monkeypatch.setattr(shapes, "top_tails", lambda name, dim: {})
    assert all(str(o.status) == "passed" for o in rung1(m.spec))
