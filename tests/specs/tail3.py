"""Three points, the third wrong: a verdict worth keeping (exit 1, a FAILED point);
tests/test_nothing_lost.py and bench/hostile_probes.py climb copies of it."""
import kladder as kl


def kernel(x):
    y = 2 * x
    if x.shape[0] == 3:
        y[-1] = 0.5
    return y


spec = kl.Spec("tail", kernel=kernel, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
