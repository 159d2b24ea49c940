"""A torch setting changed for one block and put back after it, whatever the block raised.

Kladder's workers run with deterministic algorithms and fill_uninitialized_memory on
(run/worker.py: torch.empty returns NaN, so a kernel that reads memory it never wrote shows it).
A few steps must briefly run otherwise: a CUDA graph's capture (a fill captured with each call
doubles the kernels a replay runs), a guarded buffer that is filled once by hand, the honest
peer's reference run on one thread. Each does it through `torch_setting`, never by hand: a hand-
made flip that misses its restore on one path leaves the worker's next points judged under the
wrong setting."""
from __future__ import annotations

import sys
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



def deterministic_on() -> None:
    """torch.use_deterministic_algorithms(True, warn_only=True) without importing Inductor's config
    (1.5 s of sympy and Dynamo on the 2-core CPU, for a process that may never compile): torch's
    flag is set at once; Inductor's `deterministic`, which torch's function sets too, on its config
    if it is imported, else the moment it is (an import hook that sets it as the module finishes
    loading, then removes itself). No environment variable is set: a process started from this
    one, and the environment's fingerprint, are what they are without it."""
    import torch
    torch._C._set_deterministic_algorithms(True, warn_only=True)
    config = sys.modules.get(INDUCTOR_CONFIG)
    if config is not None:
        config.deterministic = True
    elif not any(isinstance(f, _SetOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _SetOnImport())


INDUCTOR_CONFIG = "torch._inductor.config"


class _SetOnImport:
    """A meta path finder for Inductor's config alone: it finds the module as the other finders
    do, and sets `deterministic` on it once it has loaded."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != INDUCTOR_CONFIG:
            return None
        import importlib.machinery
        sys.meta_path.remove(self)                 # once; the other finders find the module
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.deterministic = True

        spec.loader.exec_module = exec_module
        return spec
