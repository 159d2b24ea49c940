"""kladder's spec for examples/tiled/add2d.py: a launcher that takes its tile as keyword
arguments, declared as `configs`, with each config's block sizes declared as the dims' tiles.

    kladder climb examples/tiled/add2d_spec.py --rungs 1 --device cpu
    kladder points examples/tiled/add2d_spec.py --rungs 1 --device cpu
"""
import kladder as kl
from add2d import add2d, add2d_reference

# Every config the launcher accepts that callers (or a tuned table) may pass. kladder passes
# each as keyword arguments (add2d(x, y, BLOCK_M=16, BLOCK_N=64)) and also calls the launcher
# without any, at its defaults (32 x 64): "config left to the launcher" in a point's why.
CONFIGS = [
    {"BLOCK_M": 16, "BLOCK_N": 64},
    {"BLOCK_M": 32, "BLOCK_N": 64},      # the launcher's default, named as well
    {"BLOCK_M": 64, "BLOCK_N": 16},
]

spec = kl.Spec(
    "example_add2d",                   # the name points, reports and repro lines carry
    kernel=add2d,                      # the launcher: add2d(x, y) or add2d(x, y, **config)
    reference=add2d_reference,         # plain torch, on float64 copies of x and y
    args={"x": kl.Tensor("M N", dtype=["float16", "float32"]),   # a shape in dim symbols, the dtypes it takes
          "y": kl.Tensor("M N", like="x")},          # y has x's dtype
    returns=kl.Tensor("M N", like="x"),  # the output: x's shape and dtype
    dims={
        # tile= lists every block size a config cuts the dim into: rung 1 puts each dim at
        # t - 1, t, t + 1 for every t, at 3 x 64 + 1 = 193 (a first, a middle and a partial
        # last tile) and at the top of the range (1023, 961), and pairs those sizes with every
        # config, so each config meets tails of its own tiles and of the others'.
        "M": kl.Dim(1, 1024, tile=[16, 32, 64]),
        "N": kl.Dim(1, 1024, tile=[16, 64], widths=[768]),
    },
    configs=CONFIGS,                   # the keyword arguments above; never a config's tile read from here
    rows="M",                          # rows are independent: a big point (on a GPU) checks sampled rows
)
