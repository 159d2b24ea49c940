import os, sys, time
os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests"))
import torch; torch.set_num_threads(1)
from kladder.point import Point
from kladder.run.trial import run_point
from specs.torch_ops import SPECS
MEASURED = {
    "layer_norm": ((("M", 4096), ("N", 2)), (("x", "float32"),), 20),
    "linear": ((("M", 32), ("N", 32), ("K", 16384)), (("x", "float32"),), 64),
    "rope": ((("S", 16), ("H", 4), ("D", 64)), (("q", "float16"),), 1000),
}
for name in sys.argv[1:] or MEASURED:
    dims, dtypes, seeds = MEASURED[name]
    spec = SPECS[name]
    t = time.perf_counter()
    bad = sum(run_point(spec, Point(spec.name, 1, dims, dtypes, seed=s), "cpu").outcome.status != "passed" for s in range(1, seeds + 1))
    print(f"{name}: {bad} of {seeds} seeds failed ({time.perf_counter() - t:.1f} s)", flush=True)
