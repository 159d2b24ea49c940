"""The core layer: the spec, points, outcomes and their facts, the small languages, budgets and sizes: data and rules every other layer reads; imports nothing above it."""
