"""`kladder points`: the points a climb would run, as text or JSON, without running any. Each
point with its id, rung, kind, why, sizes and the shape, dtype and bytes of every tensor."""
from __future__ import annotations

import json
from typing import Any

from ..core.point import Point
from ..core.sizes import dtype_of, human_bytes, nbytes_of, shape_of


def point_record(spec, point: Point) -> dict[str, Any]:
    tensors = {}
    if point.mode != "model":                  # the model sizes its own tensors
        for name in spec.all_tensors:
            tensors[name] = {"shape": list(shape_of(spec, name, point.sizes)),
                             "dtype": dtype_of(spec, name, point.dtype_of),
                             "bytes": nbytes_of(spec, name, point.sizes, point.dtype_of)}
    return {"id": point.id, "rung": point.rung, "kind": point.kind, "mode": point.mode, "needs": point.needs,
            "sizes": point.sizes, "dtypes": point.dtype_of, "seed": point.seed, "why": point.why,
            "tensors": tensors, "point": point.to_dict()}


def points_json(spec, ref: str, device: str, points: list[Point], planned: bool = False) -> str:
    return json.dumps({"spec": spec.name, "ref": ref, "device": device, "planned": planned,
                       "points": [point_record(spec, p) for p in points]}, indent=1)


def points_text(spec, ref: str, device: str, points: list[Point], planned: bool = False) -> str:
    where = f"{device} (planned: no CUDA device here; the points and budgets a GPU's climb would have)" if planned \
        else device
    lines = [f"kladder points {ref}  on {where}: {len(points)} point{'s' if len(points) != 1 else ''}"]
    for p in points:
        rec = point_record(spec, p)
        size = sum(t["bytes"] for t in rec["tensors"].values())
        flags = ", ".join(x for x in (p.kind, p.mode if p.mode != "eager" else "", "GPU" if p.needs == "cuda" else "") if x)
        lines.append(f"r{p.rung}  {p.id}  [{flags}]  {human_bytes(size)} of tensors")
        lines.append(f"      why: {p.why}")
    return "\n".join(lines) + "\n"
