# examples/stateful/ringsum_spec.py, beside the kernel and its launcher (examples/stateful/ringsum.py)
import kladder as kl
from ringsum import rowsum, rowsum_forgets_to_zero   # this folder is on sys.path while kladder loads the spec


def rowsum_ref(x):                                   # plain torch; kladder feeds it float64 copies
    return x.sum(-1)


FIELDS = dict(
    reference=rowsum_ref,
    args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"])},
    returns=kl.Tensor("M", dtype="float32"),
    dims={"M": kl.Dim(1, 256),                       # one program per row
          "N": kl.Dim(1, 8192, tile=128)},           # the kernel loops over N in blocks of 128
    # How the model calls it: twice per step on the same inputs, then twice on new ones ("AABB"),
    # new inputs every step (fresh=True), 400 calls in a run. The launcher keeps state (a ring of
    # 256 workspaces): rung 5 drives a stream of 400 calls in that pattern, in a fresh process,
    # each on its own inputs and judged against the reference of those inputs.
    repetition=kl.Repetition(calls=kl.Calls(pattern="AABB", fresh=True, count=400)),
)

spec = kl.Spec("ring_rowsum", kernel=rowsum, **FIELDS)
# the same launcher without its fix: rung 5's stream finds call 257 wrong, the first after the ring wraps
spec_forgets_to_zero = kl.Spec("ring_rowsum_forgets_to_zero", kernel=rowsum_forgets_to_zero, **FIELDS)
