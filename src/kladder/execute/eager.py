"""Eager: one call on the default stream, on fresh poisoned outputs (rung 1 and below)."""
from __future__ import annotations


class Eager:
    name = "eager"

    def run(self, h) -> tuple[list, str]:
        prep = h.prepare()
        return h.check(prep, h.call(prep)), prep.rows_text
