"""embedding_chunk_tail: an embedding lookup copies rows wider than 8192 elements through a
staging buffer in chunks of 2048, and sizes every chunk by an integer division of the row
(D // num_chunks): when the last chunk is partial, every chunk copies fewer elements than its
slot holds, and the rest of each slot is whatever the staging buffer held.

out[t, :] = weight[ids[t], :]. Rows up to 8192 elements go in one pass (one program per
token, the whole row). Wider rows go through a staging buffer, one program per (token,
chunk of 2048): a reader copies the chunk from the weight row into its slot, a writer copies
the slot into the output. The reader's chunk length is D // num_chunks: right whenever 2048
divides D (16384 = 8 x 2048), short by up to 2047 / num_chunks elements per chunk otherwise
(D = 8224: 5 chunks of 1644 elements, 404 unwritten in every slot). The twin's reader copies
min(2048, D - c * 2048) elements of chunk c.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="embedding_chunk_tail",
    gap="shapes",
    rung=1,
    mirrors="tenstorrent/tt-metal #43567 and #44500 (ttnn.embedding wrong at hidden 10752 and 8960, Gemma 4), "
            "fixed by #43912 (partial trailing chunk in the chunked tilize path)",
    needs="cpu",
    story=(
        "ttnn.embedding takes a chunked path once a weight row no longer fits its staging buffers "
        "(a bfloat16 row wider than 8192 elements), 64 tiles (2048 elements) a chunk. Its reader "
        "computed the per-chunk byte size as weight_block_size / num_chunks (integer division): when "
        "the row's tile count was not a multiple of the chunk, the last chunk wrote fewer bytes than "
        "the slot reserved and the compute kernel tilized uninitialised data, PCC 0.02 "
        "(github.com/tenstorrent/tt-metal/pull/43912). It surfaced in Gemma 4's bring-up at hidden "
        "10752 (#43567) and again at 8960 (#44500: 'the chunked reader/compute contract needs an "
        "explicit partial-tail concept'), while every tested width passed: 10240, 16384 and every row "
        "up to 8192 (the one-pass path). Here the chunked path copies each chunk through a staging "
        "buffer the launcher allocated with torch.empty, and its reader sizes every chunk as "
        "D // num_chunks. The author declares D = kl.Dim(1, 16384, tile=2048), the documented limit and "
        "chunk, with the widths of the models served (4096, 5120, 7168: all on the one-pass path) and "
        "the ids as range=(0, 'V-1'). Rung 1's tails at the bottom of the range (2047, 2049, 6145), the "
        "widths and their neighbours and the maximum (16384 = 8 whole chunks) all pass; its tails at "
        "the top of the range, 16383 (the largest size with a tail) and 14337 (max - tile + 1), take "
        "the chunked path with a partial last chunk and fail, NaN in every chunk where kladder's "
        "workers fill torch.empty with NaN. Without the top tails (rung 1 before issue 21) every "
        "rung-1 point passes. (An author who also listed a width above 8192, 8192 or 12288, would "
        "get it from that width's neighbours 8193, 12287, 12289 as well.)"
    ),
)

ONE_PASS_MAX = 8192     # the widest row the one-pass path holds
CHUNK = 2048            # the chunked path's chunk: 64 tiles of 32


@triton.jit
def _row_kernel(ids_ptr, w_ptr, out_ptr, D, stride_w, stride_o, BLOCK: tl.constexpr):
    t = tl.program_id(0)
    row = tl.load(ids_ptr + t)
    cols = tl.arange(0, BLOCK)
    x = tl.load(w_ptr + row * stride_w + cols, mask=cols < D)
    tl.store(out_ptr + t * stride_o + cols, x, mask=cols < D)


@triton.jit
def _read_chunks(ids_ptr, w_ptr, stage_ptr, D, stride_w, num_chunks, CHUNK: tl.constexpr):
    t, c = tl.program_id(0), tl.program_id(1)
    row = tl.load(ids_ptr + t).to(tl.int64)
    lane = tl.arange(0, CHUNK)
    cols = c * CHUNK + lane
    # The bug: every chunk's length is the row divided by the chunk count (integer division);
    # right only when CHUNK divides D.
    n = D // num_chunks
    x = tl.load(w_ptr + row * stride_w + cols, mask=(lane < n) & (cols < D))
    tl.store(stage_ptr + (t * num_chunks + c) * CHUNK + lane, x, mask=(lane < n) & (cols < D))


@triton.jit
def _read_chunks_fixed(ids_ptr, w_ptr, stage_ptr, D, stride_w, num_chunks, CHUNK: tl.constexpr):
    t, c = tl.program_id(0), tl.program_id(1)
    row = tl.load(ids_ptr + t).to(tl.int64)
    lane = tl.arange(0, CHUNK)
    cols = c * CHUNK + lane
    # The fix: chunk c holds min(CHUNK, D - c * CHUNK) elements (an explicit partial tail).
    x = tl.load(w_ptr + row * stride_w + cols, mask=cols < D)
    tl.store(stage_ptr + (t * num_chunks + c) * CHUNK + lane, x, mask=cols < D)


@triton.jit
def _write_chunks(stage_ptr, out_ptr, D, stride_o, num_chunks, CHUNK: tl.constexpr):
    t, c = tl.program_id(0), tl.program_id(1)
    lane = tl.arange(0, CHUNK)
    cols = c * CHUNK + lane
    x = tl.load(stage_ptr + (t * num_chunks + c) * CHUNK + lane, mask=cols < D)
    tl.store(out_ptr + t.to(tl.int64) * stride_o + cols, x, mask=cols < D)


def _launch(reader, ids, weight):
    (T,), D = ids.shape, weight.shape[1]
    if weight.stride(1) != 1:
        weight = weight.contiguous()                 # rows are read with unit stride
    ids = ids.contiguous()
    out = torch.empty((T, D), dtype=weight.dtype, device=weight.device)
    if T == 0 or D == 0:
        return out
    if D <= ONE_PASS_MAX:
        _row_kernel[(T,)](ids, weight, out, D, weight.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(D))
        return out
    num_chunks = triton.cdiv(D, CHUNK)
    stage = torch.empty((T, num_chunks, CHUNK), dtype=weight.dtype, device=weight.device)
    reader[(T, num_chunks)](ids, weight, stage, D, weight.stride(0), num_chunks, CHUNK=CHUNK)
    _write_chunks[(T, num_chunks)](stage, out, D, out.stride(0), num_chunks, CHUNK=CHUNK)
    return out


def embedding(ids, weight):
    """out [T, D] = weight[ids]: ids [T] int64 in [0, V), weight [V, D] fp32/fp16."""
    return _launch(_read_chunks, ids, weight)


def embedding_fixed(ids, weight):
    return _launch(_read_chunks_fixed, ids, weight)


def embedding_ref(ids, weight):
    return weight[ids]


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "embedding",
        kernel=kernel,
        reference=embedding_ref,
        args={"ids": kl.Tensor("T", dtype="int64", range=(0, "V-1")),
              "weight": kl.Tensor("V D", dtype=["float32", "float16"])},
        returns=kl.Tensor("T D", like="weight"),
        # D: the hidden size, up to 16384, cut into chunks of 2048 once a row is wider than
        # 8192; the widths of the models served (Llama-3 8B 4096, Qwen 14B/32B 5120, DeepSeek-V3 7168)
        dims={"T": kl.Dim(1, 4096), "V": kl.Dim(1, 32768),
              "D": kl.Dim(1, 16384, tile=CHUNK, widths=[4096, 5120, 7168])},
    )


spec, fixed = build_specs(make_spec, embedding, embedding_fixed)
