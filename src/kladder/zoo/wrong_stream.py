"""wrong_stream: the wrapper launches its kernel on a stream it made for itself, without
making that stream wait on the caller's; the kernel can read its input before the caller's
writes to it have landed.

s[m] = max(|x[m, :]|) / 448, the per-token scale of an fp8 (e4m3) quantisation, from bf16/fp16
x, BLOCK_M rows per program. The wrapper runs the kernel on a module-level stream of its own so
that it overlaps the caller's work, and makes the caller's stream wait on that stream
afterwards: the output is ordered for whoever reads it, the input is not. The twin makes its
stream wait on the caller's before the launch (and tells the allocator, with record_stream,
that each tensor is used on the other stream too). Without CUDA there are no streams: both
run the kernel inline.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="wrong_stream",
    gap="execution modes",
    rung=4,
    mirrors="FlyDSL #1220",
    needs="cuda",
    story=(
        "token_scales computes per-token fp8 scales (max |x| / 448 over each row) on a stream "
        "it keeps for itself, so that the quantisation overlaps the caller's next kernel, and "
        "makes the caller's stream wait on that stream afterwards, so the scales are ordered "
        "for whoever reads them. It never makes its stream wait on the caller's: the kernel "
        "can start before the caller's writes to x have landed and read whatever x held "
        "(FlyDSL #1220 filled its inputs on one stream and launched on another with raw "
        "pointers; about once in 100,000 launches the output kept its identity value). The "
        "unit test built x and called the wrapper: the fill was long done by the time the "
        "kernel started, as it nearly always is, so the test passed. Rung 4's stream mode "
        "is built for it: the inputs are produced on the caller's stream just before the call "
        "by a producer that is late on purpose (torch.cuda._sleep), so the kernel on the "
        "wrapper's stream reads the poisoned inputs and every scale is wrong; the race shows "
        "when the wrapper launches before the producer is done, which a warm kernel does. "
        "Rung 4's graph mode fails it too: the wrapper's stream never joins the capture, so "
        "the capture fails (or, were it to succeed, would hold no kernel). On "
        "the GPU, rung 1 can trip over it by chance (kladder fills the inputs on the default "
        "stream just before each call; a big fill can still be running when the kernel "
        "starts). On the CPU the wrapper runs the kernel inline (no streams), only the eager "
        "modes run, and they pass: the catch needs a GPU."
    ),
)

BLOCK_M, BLOCK_N = 16, 512    # 16 tokens a program: a decode batch is one or two programs
FP8_MAX = 448.0        # the largest float8_e4m3fn
MIN_AMAX = 1e-12       # an all-zero row gets a tiny scale, not a division by zero downstream


@triton.jit
def _token_scale_kernel(x_ptr, s_ptr, M, N, stride_xm, stride_xn,
                        MIN_AMAX: tl.constexpr, FP8_MAX: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    amax = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
        amax = tl.maximum(amax, tl.abs(x.to(tl.float32)))
    scale = tl.maximum(tl.max(amax, axis=1), MIN_AMAX) / FP8_MAX
    tl.store(s_ptr + rows, scale, mask=rows < M)


def _launch(x, scales):
    M, N = x.shape
    _token_scale_kernel[(triton.cdiv(M, BLOCK_M),)](x, scales, M, N, x.stride(0), x.stride(1),
                                                    MIN_AMAX=MIN_AMAX, FP8_MAX=FP8_MAX,
                                                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)


# The overlap stream, one per device, made on first use and kept for the process.
_AUX = {}


def _aux_stream(device):
    aux = _AUX.get(device)
    if aux is None:
        aux = _AUX[device] = torch.cuda.Stream(device=device)
    return aux


def token_scales(x):
    """s[m] = max(|x[m, :]|) / 448 (x: [M, N] bf16/fp16; s: [M] fp32), on an overlap stream."""
    if not x.is_cuda:                      # no streams to overlap on: run inline
        scales = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
        _launch(x, scales)
        return scales
    caller = torch.cuda.current_stream(x.device)
    aux = _aux_stream(x.device)
    # The bug: `aux` never waits for `caller`, so the kernel may start before the caller's
    # writes to x have landed.
    with torch.cuda.stream(aux):
        scales = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
        _launch(x, scales)
    caller.wait_stream(aux)                # the caller reads `scales` only after the kernel
    return scales


def token_scales_fixed(x):
    if not x.is_cuda:
        scales = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
        _launch(x, scales)
        return scales
    caller = torch.cuda.current_stream(x.device)
    aux = _aux_stream(x.device)
    # The fix: the kernel starts only after everything the caller queued before the call.
    aux.wait_stream(caller)
    with torch.cuda.stream(aux):
        scales = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
        _launch(x, scales)
    # ... and the allocator learns that x is read on `aux` and `scales` is read on `caller`,
    # so neither block is handed out again before the other stream is done with it.
    x.record_stream(aux)
    scales.record_stream(caller)
    caller.wait_stream(aux)
    return scales


def token_scales_ref(x):
    return x.abs().amax(-1).clamp_min(MIN_AMAX) / FP8_MAX


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "token_scales",
        kernel=kernel,
        reference=token_scales_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"])},
        returns=kl.Tensor("M", dtype="float32"),
        # M: the tokens of a step, up to a prefill chunk of 8192; N: the hidden size (gpt-oss
        # 2880, Llama-3-8B 4096, DeepSeek-V3 7168), walked in tiles of BLOCK_N
        dims={"M": kl.Dim(1, 8192, tile=BLOCK_M),
              "N": kl.Dim(1, 16384, tile=BLOCK_N, widths=[2880, 4096, 7168])},
    )


spec, fixed = build_specs(make_spec, token_scales, token_scales_fixed)
