"""Capture and replay: the inputs a real run feeds a kernel, kept with their layout.

    with kladder.capture("mylib.ops:rmsnorm", to="caps"):
        run_my_model()
    kladder climb spec.py::rmsnorm --replay caps

While the block runs, `target` is replaced by a recorder that calls it and records each call's
arguments: tensors as safetensors (never pickle), one file per recorded call, holding the span
of storage each tensor views so that its strides and storage offset survive; scalars and the
layout of every tensor in `manifest.json`. Calls are deduplicated by the shapes, dtypes,
strides and scalars of their arguments (a model calls a norm with the same shapes thousands of
times), and the capture stops recording at `max_calls` distinct calls or `max_bytes` of
tensors, saying how many it dropped. `--replay DIR` turns each recorded call into a rung-2
point whose inputs are the captured tensors in their captured layout.
"""
from __future__ import annotations

import contextlib
import inspect
import json
import os
from typing import Any, Iterator

MANIFEST = "manifest.json"
ALIGN_ELEMENTS = 64      # a replayed tensor keeps its storage offset modulo this (its alignment)


def _resolve(target) -> tuple[Any, str, Any]:
    """(owner, attribute, current value) for 'pkg.mod:fn', 'pkg.mod:Class.method' or (obj, 'attr')."""
    if isinstance(target, tuple):
        owner, attr = target
        return owner, attr, getattr(owner, attr)
    if not isinstance(target, str):
        raise ValueError(f"capture target {target!r}: give 'package.module:function', 'package.module:Class.method' "
                         "or (object, 'attribute').")
    from ..model.adapter import resolve_target      # the adapter's resolver: one spelling of a target
    owner, attr = resolve_target(target)
    return owner, attr, getattr(owner, attr)


def _layout_key(value) -> Any:
    import torch
    if isinstance(value, torch.Tensor):
        return ("t", tuple(value.shape), str(value.dtype), tuple(value.stride()), value.storage_offset() % ALIGN_ELEMENTS)
    if isinstance(value, (int, float, bool, str)) or value is None:
        return ("s", value)
    return ("o", type(value).__name__)


def _span(t):
    """The 1-d span of storage a view reaches, and the view's strides within it."""
    import torch
    if t.numel() == 0:
        return t.new_empty((0,)), tuple(t.stride()), 0
    if any(st < 0 for st in t.stride()):
        t = t.contiguous()
    length = sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True)) + 1
    pre = t.storage_offset() % ALIGN_ELEMENTS
    span = torch.as_strided(t, (length + pre,), (1,), t.storage_offset() - pre)
    return span.detach().clone().cpu(), tuple(t.stride()), pre


class Recorder:
    def __init__(self, fn, to: str, max_calls: int, max_bytes: int, target_name: str):
        self.fn, self.to = fn, to
        self.max_calls, self.max_bytes = max_calls, max_bytes
        self.seen: set = set()
        self.entries: list[dict] = []
        self.bytes = 0
        self.calls = 0
        self.dropped = 0
        self.target = target_name
        try:
            self.sig = inspect.signature(fn)
        except (TypeError, ValueError):
            self.sig = None

    def __call__(self, *args, **kwargs):
        self.calls += 1
        try:
            self.record(args, kwargs)
        except Exception as e:  # noqa: BLE001 - recording must never break the user's run
            self.entries.append({"error": f"{type(e).__name__}: {e}"})
        return self.fn(*args, **kwargs)

    def _named(self, args, kwargs) -> dict:
        if self.sig is not None:
            try:
                bound = self.sig.bind(*args, **kwargs)
                return dict(bound.arguments)
            except TypeError:
                pass
        return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}

    def record(self, args, kwargs) -> None:
        import torch
        from safetensors.torch import save_file
        named = self._named(args, kwargs)
        key = tuple((k, _layout_key(v)) for k, v in named.items())
        if key in self.seen:
            return
        size = sum(v.numel() * v.element_size() for v in named.values() if isinstance(v, torch.Tensor))
        if len(self.entries) >= self.max_calls or self.bytes + size > self.max_bytes:
            self.dropped += 1
            return
        self.seen.add(key)
        entry = f"call-{len(self.entries):04d}"
        tensors, args_doc = {}, {}
        for k, v in named.items():
            if isinstance(v, torch.Tensor):
                span, stride, pre = _span(v)
                tensors[k] = span
                args_doc[k] = {"kind": "tensor", "shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch."),
                               "stride": list(stride), "storage_offset": pre, "device": str(v.device)}
            elif isinstance(v, (int, float, bool, str)) or v is None:
                args_doc[k] = {"kind": "scalar", "value": v}
            else:
                args_doc[k] = {"kind": "other", "type": type(v).__name__}
        save_file({k: t.contiguous() for k, t in tensors.items()}, os.path.join(self.to, entry + ".safetensors"))
        self.bytes += size
        self.entries.append({"entry": entry, "args": args_doc})

    def write_manifest(self) -> None:
        doc = {"target": self.target, "calls_seen": self.calls, "recorded": len([e for e in self.entries if "entry" in e]),
               "dropped_over_limits": self.dropped, "max_calls": self.max_calls, "max_bytes": self.max_bytes,
               "entries": self.entries}
        with open(os.path.join(self.to, MANIFEST), "w") as f:
            json.dump(doc, f, indent=1)


@contextlib.contextmanager
def capture(target, to: str, max_calls: int = 64, max_bytes: int = 256 << 20) -> Iterator[Recorder]:
    """Record the arguments of the calls to `target` made inside the block (see the module doc)."""
    owner, attr, fn = _resolve(target)
    os.makedirs(to, exist_ok=True)
    rec = Recorder(fn, to, max_calls, max_bytes, target if isinstance(target, str) else f"{owner!r}.{attr}")
    setattr(owner, attr, rec)
    try:
        yield rec
    finally:
        setattr(owner, attr, fn)
        rec.write_manifest()


# ---------------------------------------------------------------------------- replay
def read_manifest(directory: str) -> dict:
    path = os.path.join(directory, MANIFEST)
    if not os.path.exists(path):
        raise ValueError(f"--replay {directory!r}: no {MANIFEST} there; record one with "
                         "`with kladder.capture('pkg.mod:fn', to=DIR): ...`.")
    with open(path) as f:
        return json.load(f)


def load_entry(ref: str, device) -> dict:
    """{arg name: tensor in its captured layout, or scalar} for 'DIR/call-0003'."""
    import torch
    from safetensors.torch import load_file
    directory, entry = os.path.split(ref)
    doc = next(e for e in read_manifest(directory)["entries"] if e.get("entry") == entry)
    spans = load_file(os.path.join(directory, entry + ".safetensors"))
    out = {}
    for name, a in doc["args"].items():
        if a["kind"] == "tensor":
            span = spans[name].to(device)
            out[name] = torch.as_strided(span, a["shape"], a["stride"], a["storage_offset"])
        elif a["kind"] == "scalar":
            out[name] = a["value"]
    return out


def replay_points(spec, directory: str, rung: int):
    """One point per recorded call: dims read off the captured shapes, dtypes as captured."""
    from ..core.notation import PointKind
    from ..core.point import Point
    doc = read_manifest(directory)
    for e in doc["entries"]:
        if "entry" not in e:
            continue
        dims, dtypes, problem = {}, {}, ""
        for name, t in spec.all_tensors.items():
            if name in spec.returned or name in spec.out_args:
                continue
            a = e["args"].get(name)
            if a is None or a["kind"] != "tensor":
                problem = f"the capture has no tensor named {name!r} (it has {', '.join(e['args'])})"
                break
            if len(a["shape"]) != len(t.symbols):
                problem = f"{name} has shape {a['shape']}; the spec declares {t.shape!r}"
                break
            for sym, n in zip(t.symbols, a["shape"], strict=True):
                if sym.isdigit():
                    if int(sym) != n:
                        problem = f"{name} has {n} where the spec fixes {sym}"
                elif dims.setdefault(sym, n) != n:
                    problem = f"{sym} is {dims[sym]} in one tensor and {n} in {name}"
            allowed = spec.dtype_choices(name) or (spec.dtype_choices(t.like) if t.like else ())
            if allowed and a["dtype"] not in allowed:
                problem = f"{name} is {a['dtype']}; the spec declares {', '.join(allowed)}"
                break
            if len(spec.dtype_choices(name)) > 1:
                dtypes[name] = a["dtype"]
        missing = [d for d in spec.dims if d not in dims]
        if not problem and missing:
            problem = f"no captured tensor gives the size of {', '.join(missing)}"
        why = f"captured from a real call of {doc['target']} ({e['entry']}): " + ", ".join(
            f"{n} {a['dtype']} {'x'.join(map(str, a['shape']))} stride {tuple(a['stride'])}"
            for n, a in e["args"].items() if a["kind"] == "tensor")
        if problem:
            raise ValueError(f"--replay {directory}: {e['entry']} does not fit spec {spec.name!r}: {problem}.")
        yield Point(spec.name, rung, tuple((d, dims[d]) for d in spec.dims),
                    tuple((n, dtypes[n]) for n in spec.all_tensors if n in dtypes), why, kind=PointKind.CAPTURED,
                    replay=os.path.join(os.path.abspath(directory), e["entry"]))
