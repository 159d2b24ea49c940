"""scale_layout_mismatch: a quantiser writes its block scales interleaved for the GEMM's tile
order; the dequantiser that reads them assumes row-major. Each passes its own test.

Activations are quantised in blocks of 32 along K (the MX blocked view x: [M, K/32, 32]):
int8 elements and one e8m0 scale byte per block, the shared exponent of the block's
largest magnitude (scale = 2^(byte - 127), elements = round(x / scale), |elements| < 128).

The producer, `quantize`, writes the [M, K/32] scale buffer interleaved: the scales of 4
consecutive rows for one k-block sit next to each other (one 32-bit word per k-block for an
M-tile of 4 rows; a last group of r < 4 rows interleaves r), because that is the order the
grouped GEMM's K loop reads them in. The consumer, `dequantize`, indexes the buffer it is
handed as [M, K/32] row-major. Neither is wrong against its own test: the quantiser's test
checks its bytes against a reference quantiser that writes the same interleaved layout, and
the dequantiser's test feeds it row-major scales it built itself.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="scale_layout_mismatch",
    gap="contracts",
    rung=3,
    mirrors="aiter #5465 (one scale layout, chosen by the producer)",
    needs="cpu",
    story=(
        "The quantiser writes its e8m0 block scales interleaved, four rows' scales of one "
        "k-block side by side (the order the GEMM's K loop loads them in); the dequantiser "
        "indexes the same buffer as [M, K/32] row-major. Each passes its own test: the "
        "quantiser against a reference quantiser with the same layout (producer_spec, clean "
        "on rungs 1-3), the dequantiser on row-major scales its own test builds "
        "(consumer_spec, clean on rungs 1-3). Only the seam is wrong, and no unit test "
        "crosses it: fed the real quantiser's output, the dequantiser multiplies each block "
        "by another block's scale, off by powers of two, and nothing raises (both layouts "
        "are the same [M, K/32] bytes; aiter #5465's mismatch happened to raise, one that "
        "both sides accept does not). The layouts agree only when M = 1 or K = 32. Rung 3's chain "
        "(kl.chain of the real producer and consumer) is the check for this gap: `spec` "
        "runs quantize -> dequantize against the float computation (the dequantised "
        "activations are x, within the format's error, which the spec declares) and fails "
        "at every rung-3 point. Once the seam is under test the shape hardly "
        "matters: the chain spec fails wherever M >= 2 and K/32 >= 2 and two blocks' "
        "exponents differ, so it also fails at rung 1 (M = 3, 4, 5 around the producer's "
        "group of 4 rows, with K/32 = 89 ... 256) and at rung 2 (peaked, ties, tiny; "
        "identical, distinct and huge give every block the same exponent and pass): what "
        "catches the bug is writing the chain, not a rung's points. The twin's consumer "
        "reads the producer's interleaved layout."
    ),
)

BLOCK = 32          # elements per scale block (MX)
ROW_GROUP = 4       # rows whose scales are interleaved: one 32-bit word per k-block
QMAX = 127


@triton.jit
def _quantize_kernel(x_ptr, xq_ptr, xs_ptr, M, KB, stride_xm, stride_xk, stride_xe,
                     BLOCK_KB: tl.constexpr, BLOCK: tl.constexpr, ROW_GROUP: tl.constexpr):
    m = tl.program_id(0)
    kb = tl.arange(0, BLOCK_KB)
    e = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + m * stride_xm + kb[:, None] * stride_xk + e[None, :] * stride_xe,
                mask=kb[:, None] < KB, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=1)
    # the shared exponent: amax's exponent field less 6, so |x| / scale < 128
    exp_field = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF
    sb = tl.maximum(exp_field - 6, 0)
    inv_scale = ((254 - sb) << 23).to(tl.float32, bitcast=True)      # 2^(127 - sb), exact
    v = x * inv_scale[:, None]
    # round half to even: v + 1.5 * 2^23 keeps no fraction bits (|v| < 2^22)
    q = tl.minimum(tl.maximum((v + 12582912.0) - 12582912.0, -127.0), 127.0)
    tl.store(xq_ptr + m * KB * BLOCK + kb[:, None] * BLOCK + e[None, :], q.to(tl.int8), mask=kb[:, None] < KB)
    # interleaved for the GEMM: the scales of a group of 4 rows, k-block by k-block
    g = m // ROW_GROUP
    rows_in_group = tl.minimum(M - g * ROW_GROUP, ROW_GROUP)
    tl.store(xs_ptr + g * ROW_GROUP * KB + kb * rows_in_group + (m - g * ROW_GROUP), sb.to(tl.uint8), mask=kb < KB)


@triton.jit
def _dequantize_kernel(xq_ptr, xs_ptr, y_ptr, M, KB, stride_qm, stride_qk, stride_qe, stride_sm, stride_sk,
                       BLOCK_KB: tl.constexpr, BLOCK: tl.constexpr, ROW_GROUP: tl.constexpr,
                       INTERLEAVED: tl.constexpr):
    m = tl.program_id(0)
    kb = tl.arange(0, BLOCK_KB)
    e = tl.arange(0, BLOCK)
    q = tl.load(xq_ptr + m * stride_qm + kb[:, None] * stride_qk + e[None, :] * stride_qe,
                mask=kb[:, None] < KB, other=0)
    if INTERLEAVED:
        # the fix: the producer's layout, 4 rows' scales per k-block
        g = m // ROW_GROUP
        rows_in_group = tl.minimum(M - g * ROW_GROUP, ROW_GROUP)
        sb = tl.load(xs_ptr + g * ROW_GROUP * KB + kb * rows_in_group + (m - g * ROW_GROUP), mask=kb < KB, other=0)
    else:
        # The bug: the scale buffer is taken to be [M, K/32] row-major.
        sb = tl.load(xs_ptr + m * stride_sm + kb * stride_sk, mask=kb < KB, other=0)
    scale = (sb.to(tl.int32) << 23).to(tl.float32, bitcast=True)       # 2^(sb - 127)
    y = q.to(tl.float32) * scale[:, None]
    tl.store(y_ptr + m * KB * BLOCK + kb[:, None] * BLOCK + e[None, :], y.to(y_ptr.dtype.element_ty), mask=kb[:, None] < KB)


def _check_blocks(name, t):
    if t.dim() != 3 or t.shape[2] != BLOCK:
        raise ValueError(f"{name} must be the blocked view [M, K/{BLOCK}, {BLOCK}], got shape {tuple(t.shape)}")


def quantize(x):
    """x [M, K/32, 32] bf16/fp16 -> (xq [M, K/32, 32] int8, xs [M, K/32] uint8 e8m0 scales,
    interleaved in groups of 4 rows for the grouped GEMM)."""
    _check_blocks("x", x)
    M, KB, _ = x.shape
    xq = torch.empty((M, KB, BLOCK), dtype=torch.int8, device=x.device)
    xs = torch.empty((M, KB), dtype=torch.uint8, device=x.device)
    _quantize_kernel[(M,)](x, xq, xs, M, KB, *x.stride(),
                           BLOCK_KB=triton.next_power_of_2(KB), BLOCK=BLOCK, ROW_GROUP=ROW_GROUP)
    return xq, xs


def _dequantize(xq, xs, interleaved):
    _check_blocks("xq", xq)
    M, KB, _ = xq.shape
    if tuple(xs.shape) != (M, KB):
        raise ValueError(f"xs must be [M, K/{BLOCK}] = {(M, KB)}, got {tuple(xs.shape)}")
    if interleaved and not xs.is_contiguous():
        # an interleaved buffer is addressed by its bytes, not by [M, K/32] strides
        raise ValueError("xs must be the quantiser's packed (contiguous) scale buffer")
    y = torch.empty((M, KB, BLOCK), dtype=torch.bfloat16, device=xq.device)
    _dequantize_kernel[(M,)](xq, xs, y, M, KB, *xq.stride(), *xs.stride(),
                             BLOCK_KB=triton.next_power_of_2(KB), BLOCK=BLOCK, ROW_GROUP=ROW_GROUP,
                             INTERLEAVED=interleaved)
    return y


def dequantize(xq, xs):
    """y = xq * 2^(xs - 127) per block, bf16 (the GEMM's A operand)."""
    return _dequantize(xq, xs, interleaved=False)


def dequantize_fixed(xq, xs):
    return _dequantize(xq, xs, interleaved=True)


# ------------------------------------------------------------------------- references
def interleave_scales(s):
    """Row-major [M, KB] scales -> the producer's buffer: 4 rows' scales per k-block."""
    M, KB = s.shape
    m = torch.arange(M, device=s.device)[:, None]
    kb = torch.arange(KB, device=s.device)[None, :]
    g = m // ROW_GROUP
    rows_in_group = (M - g * ROW_GROUP).clamp(max=ROW_GROUP)
    offset = g * ROW_GROUP * KB + kb * rows_in_group + (m - g * ROW_GROUP)
    out = torch.empty(M * KB, dtype=s.dtype, device=s.device)
    out[offset.reshape(-1)] = s.reshape(-1)
    return out.view(M, KB)


def quantize_ref(x):
    """The quantiser's rule in float64: the exponent field of each block's amax (0 below the
    smallest normal), less 6; elements round half to even and clamp to +-127."""
    amax = x.abs().amax(-1)
    _, e = torch.frexp(amax)                       # amax = f * 2^e, f in [0.5, 1)
    exp_field = torch.where(amax >= 2.0 ** -126, e + 126, torch.zeros_like(e))
    sb = (exp_field - 6).clamp(min=0)
    q = torch.round(torch.ldexp(x, (127 - sb)[..., None])).clamp(-QMAX, QMAX)
    return q.to(torch.int8), interleave_scales(sb.to(torch.uint8))


def dequantize_ref(xq, xs):
    """Row-major scales, as the dequantiser's author knows them."""
    return xq.double() * torch.exp2(xs.double() - 127)[..., None]


def pipeline_ref(x):
    """The float computation the pipeline stands for: the dequantised activations are x."""
    return x


# ------------------------------------------------------------------------- specs
def _dims():
    import kladder as kl
    # M: tokens; KB = K / 32: hidden sizes 2880, 4096, 7168 are 90, 128, 224 blocks
    # M's tile is the producer's group of 4 interleaved rows (a last group may be partial)
    return {"M": kl.Dim(1, 4096, tile=ROW_GROUP), "KB": kl.Dim(1, 256, widths=[90, 128, 224])}


def make_spec(consumer):
    """The pipeline: the real quantiser feeding the real dequantiser, against the float
    computation."""
    import kladder as kl
    return kl.Spec(
        "quant_dequant",
        kernel=kl.chain(kl.Link(quantize, outputs=("xq", "xs")), kl.Link(consumer, outputs=("y",))),
        reference=pipeline_ref,
        args={"x": kl.Tensor(f"M KB {BLOCK}", dtype=["bfloat16", "float16"])},
        returns=kl.Tensor(f"M KB {BLOCK}", dtype="bfloat16"),
        dims=_dims(),
        # The format's own error, which the author knows: an element is off by at most one
        # quantisation step, 2^-6.99 of its block's largest magnitude (|x| / scale < 128 and
        # rounding is to the nearest step, except at the clamp to 127), and the dequantised
        # value is exact in bf16 (7 bits). kladder scales rtol by the row's RMS, and the row
        # here is the block of 32, whose RMS is at least amax / sqrt(32): the error is at most
        # sqrt(32) / 127.5 = 0.044 of it.
        tolerance={"bfloat16": (5e-2, 1e-5)},
    )


def make_producer_spec():
    """The quantiser's own test: its bytes against a reference quantiser, same layout."""
    import kladder as kl
    return kl.Spec(
        "quantize_mx_int8",
        kernel=quantize,
        reference=quantize_ref,
        args={"x": kl.Tensor(f"M KB {BLOCK}", dtype=["bfloat16", "float16"])},
        returns={"xq": kl.Tensor(f"M KB {BLOCK}", dtype="int8"), "xs": kl.Tensor("M KB", dtype="uint8")},
        dims=_dims(),
    )


def make_consumer_spec():
    """The dequantiser's own test: on row-major scales its author builds."""
    import kladder as kl
    return kl.Spec(
        "dequantize_mx_int8",
        kernel=dequantize,
        reference=dequantize_ref,
        args={"xq": kl.Tensor(f"M KB {BLOCK}", dtype="int8", range=(-QMAX, QMAX)),
              # the exponents a model's activations give lie well inside 2^-10 .. 2^10
              "xs": kl.Tensor("M KB", dtype="uint8", range=(117, 137))},
        returns=kl.Tensor(f"M KB {BLOCK}", dtype="bfloat16"),
        dims=_dims(),
    )


spec, fixed = build_specs(make_spec, dequantize, dequantize_fixed)
producer_spec = make_producer_spec()
consumer_spec = make_consumer_spec()
