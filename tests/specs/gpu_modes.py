"""Fixtures for rung 4's CUDA modes (kladder's own; the zoo cases for these modes are still to
come). Each wrapper is right in eager mode, called once on the default stream.

- pointer_memo: the wrapper memoises results by the input's data pointer and shape; a CUDA
  graph's warm-up fills the memo, the capture hits it and records no work, so every replay
  returns the warm-up's (stale) output.
- own_stream: the wrapper launches its work on a stream it created, without waiting on the
  caller's stream; inputs produced on the caller's stream just before may not be there yet.
- steady: a correct wrapper, which every mode must pass.
"""
import torch

import kladder as kl

_STREAM = {}


_MEMO = {}


def pointer_memo_square(x):
    key = (x.data_ptr(), tuple(x.shape))                       # the bug: same buffer, new values
    if key not in _MEMO:
        _MEMO[key] = x * x
    return _MEMO[key]


def own_stream_square(x):
    s = _STREAM.setdefault("s", torch.cuda.Stream())
    with torch.cuda.stream(s):                                 # no s.wait_stream(caller): the bug
        y = torch.empty_like(x)
        for _ in range(8):                                     # enough work to lose the race
            torch.mul(x, x, out=y)
    torch.cuda.current_stream().wait_stream(s)
    return y


def square_ref(x):
    return x * x


def steady_square(x):
    return x * x


ARGS = {"x": kl.Tensor("M N", dtype="float32")}
DIMS = {"M": kl.Dim(1, 4096, tile=64), "N": kl.Dim(1, 8192, tile=128)}

pointer_memo = kl.Spec("pointer_memo", kernel=pointer_memo_square, reference=square_ref, args=ARGS,
                       returns=kl.Tensor("M N", like="x"), dims=DIMS)
own_stream = kl.Spec("own_stream", kernel=own_stream_square, reference=square_ref, args=ARGS,
                     returns=kl.Tensor("M N", like="x"), dims=DIMS)
steady = kl.Spec("steady", kernel=steady_square, reference=square_ref, args=ARGS,
                 returns=kl.Tensor("M N", like="x"), dims=DIMS)
