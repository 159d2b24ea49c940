"""Three-point cases for `kladder zoo climb` over every case (tests/test_zoo_run.py): a kernel
wrong at N = 3 with its fixed twin, and a correct kernel (kladder's own fixture)."""
import kladder as kl


def doubled(x):
    return 2 * x


def doubled_wrong_at_3(x):
    out = 2 * x
    if x.shape[0] == 3:
        out[-1] += 1
    return out


def _spec(name, kernel):
    return kl.Spec(name, kernel=kernel, reference=doubled, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})


spec = _spec("double_wrong", doubled_wrong_at_3)
right = _spec("double", doubled)
