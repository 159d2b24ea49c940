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


# ---------------------------------------------------------------------------- start-up without torch._dynamo
# torch.use_deterministic_algorithms imports torch._inductor.config to set its `deterministic`
# flag, and the first call of a TorchDispatchMode's __torch_dispatch__ imports torch._dynamo to
# wrap it in dynamo.disable: torch._dynamo, sympy and ~900 modules, 2.2 s of CPU a process on
# the 2-core machine (more than `import torch`), paid by every worker and every mode's own
# process at its first guarded call, for a kernel that never compiles anything. Both are done
# as torch does them, at the moment they can matter: the flag as Inductor's config is imported
# (nothing compiles before; here), dynamo's disable once dynamo is imported (no frame can be
# traced before; core/dispatchmodes.py, for every mode kladder enters).
INDUCTOR_CONFIG = "torch._inductor.config"


def deterministic_on() -> None:
    """torch.use_deterministic_algorithms(True, warn_only=True), with Inductor's `deterministic`
    flag set when its config is imported rather than importing it now."""
    import sys

    import torch
    torch._C._set_deterministic_algorithms(True, warn_only=True)
    config = sys.modules.get(INDUCTOR_CONFIG)
    if config is not None:
        config.deterministic = True
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(INDUCTOR_CONFIG, _inductor_deterministic))


def _inductor_deterministic(config) -> None:
    import torch
    config.deterministic = torch.are_deterministic_algorithms_enabled()


class _AfterImport:
    """A meta path finder that runs `then(module)` right after module `name` is executed, once
    (the finders after it find the module; only its loader's exec_module is wrapped)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        import importlib.util
        import sys
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run, then = loader.exec_module, self.then

        def exec_module(module):
            run(module)
            then(module)
        loader.exec_module = exec_module
        return spec
