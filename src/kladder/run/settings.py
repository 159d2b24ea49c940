"""A torch setting changed for one block and put back after it, whatever the block raised.

Kladder's workers run with deterministic algorithms and fill_uninitialized_memory on
(run/worker.py: torch.empty returns NaN, so a kernel that reads memory it never wrote shows it).
A few steps must briefly run otherwise: a CUDA graph's capture (a fill captured with each call
doubles the kernels a replay runs), a guarded buffer that is filled once by hand, the honest
peer's reference run on one thread. Each does it through `torch_setting`, never by hand: a hand-
made flip that misses its restore on one path leaves the worker's next points judged under the
wrong setting."""
from __future__ import annotations

from contextlib import contextmanager


def _fill_get() -> bool:
    import torch
    return torch.utils.deterministic.fill_uninitialized_memory


def _fill_put(value: bool) -> None:
    import torch
    torch.utils.deterministic.fill_uninitialized_memory = value


def _threads_get() -> int:
    import torch
    return torch.get_num_threads()


def _threads_put(value: int) -> None:
    import torch
    torch.set_num_threads(value)


# name: (read it, set it)
SETTINGS = {"fill_uninitialized_memory": (_fill_get, _fill_put), "num_threads": (_threads_get, _threads_put)}


@contextmanager
def torch_setting(name: str, value):
    """Inside the block, torch's setting `name` (a key of SETTINGS) is `value`; after it, what it
    was before, on an exception too. Yields the value it had."""
    get, put = SETTINGS[name]
    was = get()
    put(value)
    try:
        yield was
    finally:
        put(was)
