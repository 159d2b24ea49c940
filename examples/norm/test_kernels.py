# examples/norm/test_kernels.py, beside the spec
from rmsnorm_spec import spec as test_rmsnorm       # the spec above, under a name pytest collects
