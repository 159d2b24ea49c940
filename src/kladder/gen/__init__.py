"""The gen layer: from a spec to points (gaps/: one generator a rung) and from a point to tensors (values, ids, rows, layouts, captured calls)."""
