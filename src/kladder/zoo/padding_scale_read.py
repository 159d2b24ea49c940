"""padding_scale_read: packed rows hold 14 valid e8m0 scale bytes, then padding to 16; the
kernel reads all 16, and 0xFF padding decodes as NaN.

The scores of an MLA-style decode step: s[m, n] = sum_k q[m, k] * kv[n, k], where the
query row is quantised: q holds 448 int8 elements in 14 blocks of 32, each block with one
e8m0 scale byte (scale = 2^(byte - 127)). The 14 scale bytes of a row sit in a 16-byte
slot (q_scale: [M, 16], bytes 14 and 15 padding) so that a row's scales are one aligned
16-byte load. The kernel dequantises a query row as a 16 x 32 tile (448 rounded up to a
power of two): it loads the 14 data blocks with a mask and the 16 scale bytes without one.
The two extra scales multiply masked zeros, so they are harmless while the padding is zero;
a padding byte 0xFF decodes to 2^128 = inf, 0 * inf = NaN, and the NaN runs through the dot
product into every score of the row.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="padding_scale_read",
    gap="contracts",
    rung=3,
    mirrors="aiter MLA decode (reference/001: 14 valid scale bytes, 16 read)",
    needs="cpu",
    story=(
        "A query row is 448 int8 elements in 14 blocks of 32, with 14 e8m0 scale bytes in "
        "a 16-byte slot. The decode kernel dequantises the row as a 16 x 32 tile: the data "
        "load is masked to the 14 real blocks, the 16-byte scale load is not (the slot is "
        "16 bytes, so the load never leaves the row). The two padding scales multiply "
        "masked zeros, which is harmless while the padding is 0x00, and the unit test's "
        "quantiser builds the slots from torch.zeros, so it always is. In a served model "
        "the query buffer is reused and the padding holds whatever the last step left: a "
        "padding byte 0xFF is the e8m0 NaN encoding, decodes (as exponent bits) to inf, and "
        "0 * inf = NaN flows through the dot product into every score of the row (aiter's "
        "MLA decode: gsm8k 0.95 -> 0.03). Rungs 1 and 2 fill padding with zeros, like the "
        "unit test, and pass. Rung 3 poisons q_scale's padding bytes (0xFF, 0x7F, 0x80, a "
        "per-byte pattern, random bytes) and requires the output to stay bit for bit that of "
        "zero padding: with 0xFF every score comes out NaN, against a finite reference "
        "that reads only the valid bytes (the other fills decode to finite scales, which "
        "multiply zeros, and pass). The twin masks the scale load to the 14 valid bytes."
    ),
)

BLOCK = 32            # elements per scale block
N_BLOCKS = 14         # scale blocks per query row: 14 x 32 = 448 elements
SCALE_SLOT = 16       # bytes per row of q_scale: the 14 scales, then padding
HEAD_DIM = N_BLOCKS * BLOCK
BLOCK_N = 32          # keys per program


@triton.jit
def _dequant_query(q_ptr, s_ptr, m, stride_qm, stride_qk, stride_sm, stride_sk,
                   BLOCK: tl.constexpr, N_BLOCKS: tl.constexpr, SLOTS: tl.constexpr,
                   MASK_SCALES: tl.constexpr):
    """Query row m as a [SLOTS * BLOCK] fp32 vector, zero past the 14 data blocks."""
    blk = tl.arange(0, SLOTS)
    k = blk[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    q = tl.load(q_ptr + m * stride_qm + k * stride_qk, mask=blk[:, None] < N_BLOCKS, other=0)
    if MASK_SCALES:
        # the fix: read the 14 valid scale bytes only
        sb = tl.load(s_ptr + m * stride_sm + blk * stride_sk, mask=blk < N_BLOCKS, other=0)
    else:
        # The bug: the slot is 16 bytes, so all 16 are loaded unmasked; bytes 14 and 15 are padding.
        sb = tl.load(s_ptr + m * stride_sm + blk * stride_sk)
    # e8m0 -> fp32: the byte is the exponent field (0xFF gives inf, the e8m0 NaN)
    scale = (sb.to(tl.int32) << 23).to(tl.float32, bitcast=True)
    return tl.reshape(q.to(tl.float32) * scale[:, None], (SLOTS * BLOCK,))


@triton.jit
def _scores_kernel(q_ptr, s_ptr, kv_ptr, out_ptr, N,
                   stride_qm, stride_qk, stride_sm, stride_sk, stride_kn, stride_kk, stride_om,
                   BLOCK: tl.constexpr, N_BLOCKS: tl.constexpr, SLOTS: tl.constexpr,
                   BLOCK_N: tl.constexpr, MASK_SCALES: tl.constexpr):
    m = tl.program_id(0)
    x = _dequant_query(q_ptr, s_ptr, m, stride_qm, stride_qk, stride_sm, stride_sk,
                       BLOCK, N_BLOCKS, SLOTS, MASK_SCALES)
    cols = tl.arange(0, SLOTS * BLOCK)
    keys = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    kv = tl.load(kv_ptr + keys[:, None] * stride_kn + cols[None, :] * stride_kk,
                 mask=(keys[:, None] < N) & (cols[None, :] < N_BLOCKS * BLOCK), other=0.0)
    s = tl.sum(kv.to(tl.float32) * x[None, :], axis=1)
    tl.store(out_ptr + m * stride_om + keys, s.to(out_ptr.dtype.element_ty), mask=keys < N)


def _launch(q, q_scale, kv, mask_scales):
    M, N = q.shape[0], kv.shape[0]
    if q.shape[1] != HEAD_DIM or q_scale.shape[1] != SCALE_SLOT or kv.shape[1] != HEAD_DIM:
        raise ValueError(f"expected q [M, {HEAD_DIM}] int8, q_scale [M, {SCALE_SLOT}] uint8, kv [N, {HEAD_DIM}]; "
                         f"got {tuple(q.shape)}, {tuple(q_scale.shape)}, {tuple(kv.shape)}")
    out = torch.empty((M, N), dtype=torch.bfloat16, device=q.device)
    grid = (M, triton.cdiv(N, BLOCK_N))
    _scores_kernel[grid](q, q_scale, kv, out, N, *q.stride(), *q_scale.stride(), *kv.stride(), out.stride(0),
                         BLOCK=BLOCK, N_BLOCKS=N_BLOCKS, SLOTS=SCALE_SLOT, BLOCK_N=BLOCK_N,
                         MASK_SCALES=mask_scales)
    return out


def decode_scores(q, q_scale, kv):
    """s = dequant(q, q_scale) @ kv.T: q [M, 448] int8 with e8m0 block scales q_scale
    [M, 16] uint8 (14 valid, 2 padding), kv [N, 448] bf16; s [M, N] bf16."""
    return _launch(q, q_scale, kv, mask_scales=False)


def decode_scores_fixed(q, q_scale, kv):
    return _launch(q, q_scale, kv, mask_scales=True)


def decode_scores_ref(q, q_scale, kv):
    """Reads only the 14 valid scale bytes of each row."""
    scale = torch.exp2(q_scale[:, :N_BLOCKS].double() - 127)
    x = q.double() * scale.repeat_interleave(BLOCK, dim=1)
    return x @ kv.double().T


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "mla_decode_scores",
        kernel=kernel,
        reference=decode_scores_ref,
        args={"q": kl.Tensor(f"M {HEAD_DIM}", dtype="int8", range=(-127, 127)),
              # 14 e8m0 scale bytes per row in a 16-byte slot; the exponents a model's
              # activations give lie well inside 2^-10 .. 2^10
              "q_scale": kl.Tensor(f"M {SCALE_SLOT}", dtype="uint8", valid=N_BLOCKS, range=(117, 137)),
              "kv": kl.Tensor(f"N {HEAD_DIM}", dtype="bfloat16")},
        returns=kl.Tensor("M N", dtype="bfloat16"),
        # M: query heads x tokens of one decode step; N: cached keys
        dims={"M": kl.Dim(1, 128, widths=[16, 128]),
              "N": kl.Dim(1, 4096, tile=BLOCK_N)},
    )


spec, fixed = build_specs(make_spec, decode_scores, decode_scores_fixed)
