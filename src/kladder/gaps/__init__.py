"""One module per gap; each yields Points with a one-line `why` and never runs a kernel."""
from __future__ import annotations

from . import contracts, model, modes, shapes, values

# rung -> generator module (its `points(spec, budget)` yields the rung's points)
BUILT = {shapes.RUNG: shapes, values.RUNG: values, contracts.RUNG: contracts, modes.RUNG: modes, model.RUNG: model}
