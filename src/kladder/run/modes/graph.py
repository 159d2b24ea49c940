"""CUDA graph: capture once, then replay three times with new inputs copied into the static
buffers and every output, integer ones too, poisoned before each replay (a signalling NaN
in floats, 0xA5 bytes in integers: 0xA5A5A5A5 = -1515870811 in an int32, no count or index). A host decision frozen at capture (a
counter zeroed once, a result read from the eager warm-up's output) fails a replay, whatever
the spec says about graphs: the kernel captured and then broke silently.

Whether a kernel that cannot be captured at all (a launcher that reads a count back to the
host with .item(), one that synchronizes or serves repeats from a host-side cache) is wrong
depends on what production does, which only its author knows (kl.Modes(graphs=)): claimed (True),
the failed capture is the kernel's failure; not claimed (False), the point is skipped with the
capture's error; not said (None, the default), the capture's error is a warning and the eager
call made before the capture is judged in its place. A kernel that captures is replayed and
judged in every state.

With Spec(grads=...) the forward and its backward are captured together (a training step's
graph), with fresh upstream gradients copied in before each replay and every gradient poisoned
with the outputs: a backward that reads a host value frozen at capture, or leaves a gradient
unwritten on a replay, fails there."""
from __future__ import annotations

from ...core.outcome import KernelError, error_facts
from .base import Call, Mode, Uncaptured, call_raw, heal_failed_capture

REPLAYS = 3


class Graph(Mode):
    name = "graph"
    rungs = (4,)
    needs_cuda = True
    backward = True

    def observe(self, h):
        import torch

        from ...gen.materialize import poison, poison_word
        claimed = h.spec.modes.graphs
        static = h.prepare()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):               # warm-up outside the graph: JIT, autotune
            warm = h.call(static, "warm-up before capture", runner=call_raw)
        warm_grads = dict(static.backward.grads) if static.backward is not None else None
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                returned = h.call(static, "capture", runner=call_raw)
        except Exception as e:  # in the launcher (KernelError) or on leaving the context
            heal_failed_capture()
            if claimed:
                if isinstance(e, KernelError):
                    raise
                raise KernelError(e, "capture") from e
            yield Uncaptured(error_facts(e.error if isinstance(e, KernelError) else e), skip=claimed is False)
            if claimed is False:
                return
            # kernels recorded by the failed capture never ran: the buffers hold the warm-up's results
            if warm_grads is not None:
                static.backward.grads = warm_grads
            yield Call(static, warm, "the eager call before the failed capture")
            return
        for r in range(1, REPLAYS + 1):
            fresh = h.prepare(seed=static.point.seed + r)
            for dst, src in zip(static.inputs.args, fresh.inputs.args, strict=True):
                if isinstance(dst, torch.Tensor) and dst is not src:
                    dst.copy_(src)
            if static.backward is not None:         # the captured backward reads the static upstream gradients
                _new_upstream(static.backward, fresh.backward)
            outputs = h.outputs(static, returned)
            poisoned = {}
            for name, t in outputs.items():         # every output, integer ones too: an element a
                if isinstance(t, torch.Tensor):     # replay leaves unwritten holds the poison
                    dtype = str(t.dtype).removeprefix("torch.")
                    poison(t, dtype)
                    poisoned[name] = poison_word(dtype)
            graph.replay()
            torch.cuda.synchronize()
            static.ref_args = fresh.ref_args
            static.snapshot = fresh.snapshot        # the inputs the replay got (checks/inputs.py)
            yield Call(static, returned, replay_label(r, poisoned))


def _new_upstream(static, fresh) -> None:
    """A replay's upstream gradients: fresh values copied into the buffers the capture read (a
    broadcast one, stride 0, through its one stored row), with the reference's copies and the
    snapshot the input check compares with."""
    for n, dst in static.upstream.items():
        src = fresh.upstream[n]
        stored = tuple(slice(0, 1) if st == 0 else slice(None) for st in dst.stride())
        dst[stored].copy_(src[stored])
    static.ref_extra, static.snapshot = fresh.ref_extra, fresh.snapshot


def replay_label(r: int, poisoned: dict[str, str]) -> str:
    """Which call a finding is about, and the poison every output held before it: an element
    that equals it was never written by the replay."""
    held = ", ".join(f"{n} = {w}" for n, w in poisoned.items())
    return f"replay {r} of {REPLAYS}" + (f" (outputs poisoned before it: {held})" if held else "")


MODE = Graph()

