import os

# The Triton interpreter must be chosen before triton is first imported anywhere in the
# test process (zoo kernels are imported by some tests).
os.environ.setdefault("TRITON_INTERPRET", "1")


import pytest  # noqa: E402


@pytest.fixture
def poisoned_empty():
    """For the zoo's kernel tests: torch.empty returns NaN (as under kladder), so an element
    no one wrote is visible; seeded inputs."""
    import torch
    torch.manual_seed(0)
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    yield
    torch.use_deterministic_algorithms(was)
