"""Stand-ins for heap damage (tests/test_guarded_alloc.py): `later` aborts as glibc's malloc
does on any call after its process's first, the way damage an earlier point left in the heap
kills a later one; `always` aborts on every call, as a kernel that damages the heap itself."""
import os
import sys

import kladder as kl

CALLS = [0]


def _abort():
    sys.stderr.write(f"malloc checks: MALLOC_CHECK_={os.environ.get('MALLOC_CHECK_', '')}\n")
    sys.stderr.write("free(): invalid pointer\n")
    sys.stderr.flush()
    os.abort()


def later_kernel(a):
    CALLS[0] += 1
    if CALLS[0] > 1:
        _abort()
    return a * 2


def always_kernel(a):
    _abort()


def _spec(name, kernel):
    return kl.Spec(name, kernel=kernel, reference=lambda a: a * 2, args={"a": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="a"), dims={"N": kl.Dim(1, 3)})


later = _spec("later", later_kernel)
always = _spec("always", always_kernel)
