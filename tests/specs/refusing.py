"""Fixtures for Expect(runs=False) (tests/test_knows.py): torch's GroupNorm into 4 groups, which
refuses a channel count that 4 does not divide (RuntimeError; L >= 2 keeps its other refusal, one value a channel, out), and a launcher that does not
refuse there (it normalises the channels as one group instead)."""
import torch.nn.functional as F

import kladder as kl


def group_norm(x):
    return F.group_norm(x, 4)


def group_norm_lenient(x):
    return F.group_norm(x, 4 if x.shape[1] % 4 == 0 else 1)


REFUSES = kl.Expect("*", runs=False, when={"C": lambda c: c % 4 != 0}, raises=RuntimeError,
                    label="group_norm into 4 groups")


def make(name, kernel, expect=(REFUSES,)):
    return kl.Spec(name, kernel=kernel, reference=group_norm, args={"x": kl.Tensor("B C L", dtype="float32")},
                   returns=kl.Tensor("B C L", like="x"),
                   dims={"B": kl.Dim(1, 8), "C": kl.Dim(1, 64), "L": kl.Dim(2, 64)}, toolchain=kl.Toolchain(expect=list(expect)))


torch_group_norm = make("torch_group_norm", group_norm)
lenient = make("lenient", group_norm_lenient)
unsaid = make("unsaid", group_norm, expect=())
