"""Eager: one call on the default stream, then a synchronize, so that an asynchronous
device fault surfaces inside this point and not in the next one."""
from __future__ import annotations

from typing import Any, Callable


class Eager:
    name = "eager"

    def call(self, kernel: Callable[..., Any], args: list, kwargs: dict) -> Any:
        import torch
        result = kernel(*args, **kwargs)
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        return result
