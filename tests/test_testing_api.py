"""kladder's judge in a user's own tests (issue 33, item 3): kl.inputs(spec, point) gives the inputs a
climb gives the kernel, kl.assert_close judges as a climb judges and words its AssertionError as the
report does. Against torch.testing.assert_close on the same cases: where both agree, and where
kladder's scaled tolerance (atol + rtol x max(|expected|, the row's RMS)), NaN-awareness and
overflow rule pass what torch.testing fails (never the other way round)."""
import json
import os

import pytest
import torch

import kladder as kl

HERE = os.path.dirname(os.path.abspath(__file__))


def torch_passes(actual, expected, **kw) -> bool:
    try:
        torch.testing.assert_close(actual, expected.to(actual.device), check_dtype=False, **kw)
    except AssertionError:
        return False
    return True


def kladder_passes(actual, expected, **kw) -> bool:
    try:
        kl.assert_close(actual, expected, **kw)
    except AssertionError:
        return False
    return True


def rows(m=4, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, n, generator=g, dtype=torch.float64)


def test_both_pass_a_rounding_to_the_outputs_dtype_and_both_fail_an_unwritten_tail():
    ref = rows()
    assert torch_passes(ref.to(torch.bfloat16), ref) and kladder_passes(ref.to(torch.bfloat16), ref)
    bad = ref.to(torch.bfloat16)
    bad[:, -3:] = float("nan")                       # the last three columns never written
    assert not torch_passes(bad, ref) and not kladder_passes(bad, ref)


def test_the_assertion_says_what_where_how_much_and_what_was_allowed_as_the_report_does():
    ref = rows()
    bad = ref.to(torch.bfloat16)
    bad[:, -3:] = float("nan")
    with pytest.raises(AssertionError) as e:
        kl.assert_close(bad, ref, output="y", msg="my kernel at N = 6")
    text = str(e.value)
    assert text.startswith("my kernel at N = 6\ny is not close to expected (kladder's judge):\n")
    assert "Mismatched elements: 12 / 24 (50.0%) in `y` (bfloat16, 4 x 6): the last 3 columns of every row." in text
    assert "Greatest difference at index (0, 3): kernel nan" in text and "allowed" in text
    assert "12 non-finite where the reference is finite" in text and "= bfloat16 default" in text


def test_with_a_spec_the_pattern_names_the_tile_and_the_tolerance_is_the_specs():
    spec = kl.Spec("t", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64, tile=8)},
                   tolerance={"float32": (1e-2, 1e-5)})
    ref = rows(3, 11)
    off = ref.float() * (1 + 5e-3)                  # 0.5%: past float32's default, within the spec's 1%
    assert not kladder_passes(off, ref) and kladder_passes(off, ref, spec=spec, output="out")
    off[:, -3:] += 1.0
    with pytest.raises(AssertionError, match=r"the last 3 columns \(N % 8 = 3\) of every row"):
        kl.assert_close(off, ref, spec=spec, output="out")


def test_kladder_passes_rounding_noise_near_zero_that_torchs_absolute_floor_fails():
    # a row of magnitude ~1 with one element near zero: a bfloat16 kernel's error there is the
    # row's rounding noise (~1e-3); torch.testing allows 1e-5 + 1.6e-2 x |1e-4|, kladder 1.6e-2 x the RMS
    ref = torch.tensor([[1.0, -1.0, 0.5, 1e-4]], dtype=torch.float64)
    got = ref.to(torch.bfloat16)
    got[0, 3] = 1e-4 + 1e-3
    assert not torch_passes(got, ref) and kladder_passes(got, ref)
    got[0, 3] = 0.5                                  # far past the row's noise: both fail
    assert not torch_passes(got, ref) and not kladder_passes(got, ref)


def test_nan_where_the_reference_is_nan_passes_as_torchs_equal_nan_and_an_overflow_passes():
    ref = torch.tensor([1.0, float("nan"), 2.0], dtype=torch.float64)
    got = ref.to(torch.float16)
    assert not torch_passes(got, ref) and torch_passes(got, ref, equal_nan=True) and kladder_passes(got, ref)
    big = torch.tensor([1.0, 1e6], dtype=torch.float64)          # past float16's largest finite, 65504
    assert not torch_passes(torch.tensor([1.0, float("inf")], dtype=torch.float16), big)
    assert kladder_passes(torch.tensor([1.0, float("inf")], dtype=torch.float16), big)
    assert not kladder_passes(torch.tensor([1.0, -float("inf")], dtype=torch.float16), big)   # the wrong sign


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_whatever_torch_passes_kladder_passes_over_many_random_cases(dtype):
    # the same rtol and atol: kladder's allowance max(|e|, rms) >= |e| is never smaller
    g = torch.Generator().manual_seed(1)
    tol = kl.DEFAULT_TOLERANCES[str(dtype).removeprefix("torch.")]
    agree = differ = 0
    for k in range(200):
        ref = torch.randn(3, 17, generator=g, dtype=torch.float64) * 10 ** (k % 5 - 2)
        scale = ref.pow(2).mean(-1, keepdim=True).sqrt()
        # relative noise, and an absolute part at the row's scale (what near-zero elements feel)
        noise = torch.randn(3, 17, generator=g, dtype=torch.float64) * tol.rtol * (k % 7) / 4
        got = (ref * (1 + noise) + noise.roll(1, -1) * scale * (k % 3) / 2).to(dtype)
        t, k_ = torch_passes(got, ref, rtol=tol.rtol, atol=tol.atol), kladder_passes(got, ref)
        assert k_ or not t, (k, dtype)
        agree += t == k_
        differ += k_ and not t
    assert agree > 100 and differ > 0               # both verdicts seen, and the scaled tolerance mattered


def test_an_explicit_tolerance_replaces_the_default_and_a_shape_mismatch_is_a_contract_failure():
    ref = rows()
    assert not kladder_passes(ref.float() + 1e-7, ref, rtol=0, atol=0) and kladder_passes(ref.float(), ref.float(), rtol=0, atol=0)
    with pytest.raises(AssertionError, match="shape"):
        kl.assert_close(ref[:, :5].float(), ref)
    with pytest.raises(TypeError, match="actual: got list"):
        kl.assert_close([1.0], ref)


def test_a_peer_in_the_kernels_precision_widens_the_budget_as_the_honest_peer_does():
    # a float16 running sum of 1024 terms: a correct float16 implementation is off by far more than float16's
    # default relative tolerance; given that implementation's own output as the peer, the kernel that
    # makes the same error passes, and one twice as far off does not
    g = torch.Generator().manual_seed(3)
    x = torch.rand(8, 1024, generator=g, dtype=torch.float64)
    ref = x.cumsum(-1)
    acc, sums = torch.zeros(8, dtype=torch.float16), []
    for j in range(x.shape[-1]):                 # a float16 running sum, one rounding a step (torch's
        acc = acc + x[:, j].to(torch.float16)    # own cumsum accumulates in float32 on the CPU)
        sums.append(acc)
    peer = torch.stack(sums, -1)
    assert not kladder_passes(peer, ref)
    assert kladder_passes(peer, ref, peer=peer)
    worse = (ref + 40 * (peer.double() - ref)).to(torch.float16)
    assert not kladder_passes(worse, ref, peer=peer)


def test_inputs_are_the_ones_a_climb_gives_the_kernel_layout_and_all():
    from kladder.gen.load import load_spec
    from kladder.core.point import Point
    from kladder.run.trial import run_point
    ref = os.path.join(HERE, "specs", "good.py")
    spec = load_spec(ref)
    from kladder.climbing.ladder import rung_points
    from kladder.core.sizes import budget_for
    point = next(p for p in rung_points(spec, 3, budget_for("cpu")) if p.layouts)       # a strided view of x
    seen = []
    real = spec.kernel

    def spy(*args, **kwargs):
        seen.append([a.clone() if torch.is_tensor(a) else a for a in args])
        seen.append([a.stride() if torch.is_tensor(a) else None for a in args])
        return real(*args, **kwargs)

    object.__setattr__(spec, "kernel", spy)
    try:
        run_point(spec, point, "cpu")
    finally:
        object.__setattr__(spec, "kernel", real)
    for given in (point, json.dumps(point.to_dict()), Point.from_dict(point.to_dict())):
        args = kl.inputs(ref, given, device="cpu")
        assert list(args) == list(spec.args)
        for a, b, stride in zip(args.values(), seen[0], seen[1], strict=True):
            if torch.is_tensor(a):
                assert a.stride() == stride and torch.equal(a, b)
            else:
                assert a == b


def test_inputs_refuses_a_point_of_another_spec_or_one_that_does_not_fit():
    ref = os.path.join(HERE, "specs", "good.py")
    with pytest.raises(ValueError, match="belongs to spec 'other'"):
        kl.inputs(ref, '{"spec":"other","rung":1,"dims":[["M",2],["N",2]]}')
    with pytest.raises(ValueError, match="POINT dims"):
        kl.inputs(ref, '{"spec":"softmax","rung":1,"dims":[["M",2]]}')
