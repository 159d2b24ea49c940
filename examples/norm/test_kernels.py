# examples/norm/test_kernels.py, beside the spec
from rmsnorm_spec import spec as test_rmsnorm       # the README's spec, under a name pytest collects
