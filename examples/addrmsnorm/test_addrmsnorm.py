# examples/addrmsnorm/test_addrmsnorm.py: the newcomer's own regression tests after the fixes (TRANSCRIPT.md),
# with kladder's inputs and judge in this process: kl.inputs gives the kernel what the climb gave it at the points
# that caught the bugs, kl.assert_close judges as the climb judged (and words a failure as its report does).
# Run it from the repository root: pytest examples/addrmsnorm/test_addrmsnorm.py
import os

os.environ.setdefault("TRITON_INTERPRET", "1")    # no GPU: Triton's interpreter, chosen before triton is imported

import pytest
import torch

import kladder as kl
from addrmsnorm_spec import add_rmsnorm_ref, spec

# the fixed kernel's points of the ids that caught the bugs (kladder points examples/addrmsnorm/addrmsnorm_spec.py::spec)
POINTS = [
    '{"spec":"add_rmsnorm","rung":1,"dims":[["M",1],["N",257]],"dtypes":[["x","bfloat16"]],"seed":2735225027}',
    '{"spec":"add_rmsnorm","rung":1,"dims":[["M",2],["N",2881]],"dtypes":[["x","float16"]],"seed":908743837}',
    '{"spec":"add_rmsnorm","rung":2,"dims":[["M",17],["N",513]],"dtypes":[["x","bfloat16"]],"kind":"values",'
    '"seed":1095774700,"values":[["x","huge"]]}',
]


@pytest.mark.parametrize("point", POINTS)
def test_the_fixed_kernel_is_close_where_the_bugs_were(point):
    args = kl.inputs(spec, point, device="cpu")          # {x, residual, w, eps}, as the climb passed them
    y, h = spec.kernel(*args.values())
    want_y, want_h = add_rmsnorm_ref(*(a.double() if isinstance(a, torch.Tensor) else a for a in args.values()))
    kl.assert_close(y, want_y, spec=spec, output="y")
    kl.assert_close(h, want_h, spec=spec, output="h")
