"""kladder's spec for examples/routing/expert_counts.py: ids in a range that depends on a dim,
a dim with a set of sizes, and a dim's size passed to the kernel as an int.

    kladder climb examples/routing/expert_counts_spec.py --rungs 1,2 --device cpu
    kladder points examples/routing/expert_counts_spec.py --rungs 2 --device cpu
"""
import kladder as kl
from expert_counts import BLOCK, expert_counts, expert_counts_reference

spec = kl.Spec(
    "example_expert_counts",           # the name points, reports and repro lines carry
    kernel=expert_counts,              # called as expert_counts(ids, E)
    reference=expert_counts_reference,  # torch.bincount, on a copy of the ids (integers stay integers) and E
    args={
        # range=(lo, hi): both ends inclusive, each a number or an expression over dims. An
        # integer tensor with a range also gets rung 2's id kinds: every token to one expert,
        # ids all distinct, only the first and the last expert, the last expert never used,
        # sorted and reversed ids; every value stays in [0, E-1].
        "ids": kl.Tensor("T K", dtype=["int32", "int64"], range=(0, "E-1")),
        # kl.Size("E"): the kernel and the reference get the point's size of E as a Python int
        "E": kl.Size("E"),
    },
    returns=kl.Tensor("E", dtype="int32"),   # one count per expert, compared exactly (an integer output)
    dims={
        # tokens: the kernel cuts the T x K ids, flattened, into blocks of BLOCK = 256; a tile of
        # 256 on T puts a partial last block at every K (T = 255, 257, 769, ...)
        "T": kl.Dim(1, 4096, tile=BLOCK),
        # sizes=[...]: the only sizes a dim takes, at every rung (top-k of 1, 2 or 8; 8, 16 or
        # 64 experts); rung 1 runs each of them
        "K": kl.Dim(sizes=[1, 2, 8]),
        "E": kl.Dim(sizes=[8, 16, 64]),
    },
)
