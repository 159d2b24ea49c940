import os

# The Triton interpreter must be chosen before triton is first imported anywhere in the
# test process (zoo kernels are imported by some tests).
os.environ.setdefault("TRITON_INTERPRET", "1")
