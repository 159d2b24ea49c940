"""CUDA graph: capture once, then replay three times with new inputs copied into the static
buffers and every output poisoned before each replay. A host decision frozen at capture (a
counter zeroed once, a result read from the eager warm-up's output) fails a replay."""
from __future__ import annotations

from ...outcome import KernelError
from .base import Call, call_raw, heal_failed_capture

REPLAYS = 3


class Graph:
    name = "graph"

    def observe(self, h):
        import torch

        from ...materialize import poison
        static = h.prepare()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):               # warm-up outside the graph: JIT, autotune
            h.call(static, "warm-up before capture", runner=call_raw)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                returned = h.call(static, "capture", runner=call_raw)
        except KernelError:
            heal_failed_capture()
            raise
        except Exception as e:  # noqa: BLE001 - the capture itself failed (on leaving the context)
            heal_failed_capture()
            raise KernelError(e, "capture") from e
        for r in range(1, REPLAYS + 1):
            fresh = h.prepare(seed=static.point.seed + r)
            for dst, src in zip(static.inputs.args, fresh.inputs.args):
                if isinstance(dst, torch.Tensor) and dst is not src:
                    dst.copy_(src)
            outputs = h.outputs(static, returned)
            for name, t in outputs.items():
                if isinstance(t, torch.Tensor) and t.is_floating_point():
                    poison(t, str(t.dtype).removeprefix("torch."))
            graph.replay()
            torch.cuda.synchronize()
            static.ref_args = fresh.ref_args
            yield Call(static, returned, f"replay {r} of {REPLAYS}")


MODE = Graph()

