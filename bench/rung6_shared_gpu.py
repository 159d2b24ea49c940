"""The rung-6 GPU zoo kernels with ranks sharing one GPU (Collective(share_device=True)), for
docs/results/2026-12-01-h200-round/h200x2_rung6.sh on a single GPU: what one device can run. Both ranks' CUDA IPC buffers
live on the one GPU and their kernels are time-sliced, never concurrent, so the twins must pass
and the buggy kernels are expected to pass too: their races need two GPUs running at once."""
from kladder.zoo import allreduce_relaxed_flag_gpu as rf
from kladder.zoo import allreduce_size_stride_gpu as ss

size_stride = ss.make_spec(ss.RingAllReduceGPU, share_device=True)
size_stride_fixed = ss.make_spec(ss.RingAllReduceGPUFixed, share_device=True)
relaxed_flag = rf.make_spec(rf.StagedAllReduceGPU, share_device=True)
relaxed_flag_fixed = rf.make_spec(rf.StagedAllReduceGPUFixed, share_device=True)
