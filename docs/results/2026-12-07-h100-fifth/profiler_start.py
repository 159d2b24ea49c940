"""Where torch.profiler's first use in a CUDA process spends its seconds (rung 3's independence and
rung 7's dispatch points profile in their worker): the import, the first and second profile()
sessions' enter, exit and events(), in one fresh process; printed as JSON."""
import json
import time

t = time.perf_counter()
import torch  # noqa: E402

out = {"import_torch_s": time.perf_counter() - t}
t = time.perf_counter()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
out["cuda_init_s"] = time.perf_counter() - t
t = time.perf_counter()
from torch.profiler import ProfilerActivity, profile  # noqa: E402

out["import_profiler_s"] = time.perf_counter() - t
x = torch.randn(1024, device="cuda")
for i, acts in enumerate(([ProfilerActivity.CUDA], [ProfilerActivity.CPU, ProfilerActivity.CUDA],
                          [ProfilerActivity.CPU, ProfilerActivity.CUDA])):
    t = time.perf_counter()
    p = profile(activities=acts)
    p.__enter__()
    entered = time.perf_counter()
    (x * 2).sum()
    torch.cuda.synchronize()
    body = time.perf_counter()
    p.__exit__(None, None, None)
    exited = time.perf_counter()
    n = len(p.events())
    done = time.perf_counter()
    out[f"session_{i}"] = {"activities": [str(a) for a in acts], "enter_s": entered - t, "body_s": body - entered,
                           "exit_s": exited - body, "events_s": done - exited, "events": n}
print(json.dumps(out, indent=1))
