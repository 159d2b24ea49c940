"""A worker's start and a kernel's first guarded call import neither torch._dynamo nor Inductor's
config (2.2 s of CPU a process on the 2-core machine), while what they set stays as torch sets
it: deterministic algorithms (warn only), Inductor's `deterministic` flag once its config is
imported, dynamo's disable around the guarded-allocation mode once dynamo is imported."""
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import sys
    import torch
    from kladder.run.settings import deterministic_on
    from kladder.run.guarded_alloc import guarding
    deterministic_on()
    torch.utils.deterministic.fill_uninitialized_memory = True
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    x = torch.ones(3)
    with guarding("cpu", 64) as allocated:
        y = torch.empty_like(x)
    assert bool(y.isnan().all()) and len(allocated) == 1, (y, allocated)
    print("lazy", "torch._dynamo" in sys.modules, "torch._inductor.config" in sys.modules)
    import torch._inductor.config as config
    print("inductor deterministic", config.deterministic)
    import torch._dynamo
    with guarding("cpu", 64) as allocated:
        y = torch.empty_like(x)
    from kladder.run.guarded_alloc import _mode_class
    wrapped = _mode_class().__dict__["__torch_dispatch__"].__wrapped__
    print("disabled by dynamo", getattr(wrapped, "__dynamo_disable").__module__ != "kladder.run.settings")
    f = torch.compile(lambda t: t.sin() + 1)
    with guarding("cpu", 64):
        got = f(x)
    print("compiled", bool(torch.allclose(got, x.sin() + 1)))
""")


def test_worker_start_imports_no_dynamo_and_keeps_torch_settings():
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert "lazy False False" in lines
    assert "inductor deterministic True" in lines
    assert "disabled by dynamo True" in lines
    assert "compiled True" in lines
