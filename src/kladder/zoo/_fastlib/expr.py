"""_fastlib.expr: elementwise helpers. Until 0.3 it also held `buffer_ops` (now _fastlib.buffer_ops)."""
import triton
import triton.language as tl


@triton.jit
def rms_scale(sum_sq, n, eps):
    """1 / sqrt(mean of squares + eps), in float32."""
    return tl.rsqrt(sum_sq / n + eps)
