"""Rung 5's stream of calls: the kernel called the way the model calls it (Spec.calls, e.g.
kl.Calls(pattern="AABB", fresh=True, count=10000); without it one stream in the pattern "A",
new inputs every call), each call on its own input set and judged against the reference of
those inputs. A launcher with state (a workspace, a ring of slots, a counter, a cache of recent
results) meets its thousandth call, and a cache keyed wrongly meets the inputs that collide.

How: call 1 runs on a fully prepared set (guard bytes, the input check) and is judged as every
call of rungs 1-3 is. Then batches of calls: each batch's new input sets are prepared (seeded,
no guard bytes: the stream is about state, rungs 1-3 have looked at bounds), every call of the
batch made through the launcher in the pattern's order (the same input tensors for the same
letter of one step), each writing its own poisoned slot of a ring (run/modes/repeat.Ring), and
the batch's references computed in one call of the reference over the stacked input sets
(torch.func.vmap, checked once against the plain reference of two sets; else one call a set).
The batch goes to the checks (checks/repetition.StreamTally) before the next one reuses the
ring. The stream ends at its call count or its time budget (Point.repeat: calls, seconds),
whichever comes first. A declared stream runs first in a fresh process (ladder.fresh_process):
call N is the launcher's Nth, as in a model's process; the default one runs in a worker as it
comes, its calls counted from its first. Calling only: nothing here judges."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ...core.outcome import KernelError, NoteKind, Skip
from ..stages import Stage, timed
from .base import Call, Mode, StreamBatch, Streamed
from .base import declared_writes as _declared_writes
from .repeat import Ring, ring_names

BATCH = {"cpu": (4, 256), "cuda": (8, 1024)}   # (fewest, most) calls a batch
BATCH_SHARE = 0.1                              # a batch takes about this share of the time budget
RING_BYTES = 256 << 20                         # at most this much of outputs (and as much of references) a batch
SEED_STEP = 0x9E3779B1                         # input set i's seed: the point's + i x this (mod 2^31)
VERIFY_RTOL = 1e-10                            # the batched reference against the plain one, on two sets


@dataclass(frozen=True)
class Plan:
    """Point.repeat of a stream: the budget (calls, seconds) and the model's pattern."""
    calls: int
    seconds: float
    pattern: str
    fresh: bool
    declared: bool

    @classmethod
    def of(cls, point) -> "Plan":
        d = dict(point.repeat)
        return cls(int(d.get("calls", 10_000)), float(d.get("seconds", 3.0)), str(d.get("pattern", "A")),
                   bool(d.get("fresh", True)), bool(d.get("declared", False)))

    @property
    def letters(self) -> str:
        return "".join(dict.fromkeys(self.pattern))

    def set_of(self, k: int) -> int:
        """The input set of call k (from 0): the step's sets are new when fresh, the same ones else."""
        step, i = divmod(k, len(self.pattern))
        letter = self.letters.index(self.pattern[i])
        return step * len(self.letters) + letter if self.fresh else letter

    def where(self, k: int) -> tuple[int, str]:
        """(step from 1, letter) of call k (from 0)."""
        step, i = divmod(k, len(self.pattern))
        return step + 1, self.pattern[i]


class Calls(Mode):
    name = "calls"
    rungs = (5,)
    backward = True
    measured_elsewhere = True
    runs_for_a_budget = True

    @classmethod
    def starts_fresh(cls, point) -> bool:
        """Where the spec declares how the model calls a launcher with state (Spec.calls), the
        stream runs first in a new worker: its call N is then the launcher's Nth, as in a model's
        process. The default stream runs in a worker as it comes (a new process costs seconds on a
        loaded machine); its calls count from the stream's first."""
        return bool(dict(point.repeat).get("declared"))

    def observe(self, h):
        plan = Plan.of(h.point)
        writes = _declared_writes(h)
        if writes:
            # an input the kernel writes by design is another input at its next call on the same letter
            raise Skip(NoteKind.INPUTS_MUTATED, args=writes)
        first = h.prepare()
        label = f"call 1 of the stream (input set {plan.pattern[0]} of step 1)"
        returned = h.call(first, label)
        yield Call(first, returned, label)
        yield from Stream(h, plan, first).run()


def seed_of(point_seed: int, i: int) -> int:
    return point_seed if i == 0 else (point_seed + i * SEED_STEP) % (1 << 31) or 1


ALIGN = 512                        # bytes: each input set's tensor starts where torch's allocator would put it


class Stream:
    """The stream's input sets (set 0: call 1's, fully prepared; the others made a batch at a time
    as slices of one allocation a tensor, each filled from its own seeded generator, so that a
    set's values do not depend on how the calls were batched), their references, and the calls."""

    def __init__(self, h, plan: Plan, first):
        from ..harness import Harness
        self.h, self.plan = h, plan
        self.lite = Harness(h.spec, h.point, h.device, guard=0, interpreted=h.interpreted)
        self.sets = {0: first}             # input set -> Prepared
        self.stacks: dict[int, tuple] = {}  # input set -> (its batch's stacked reference args, its index there)
        self.refs: dict[int, dict] = {}    # input set -> the reference's outputs by name
        self.batched: bool | None = None   # the reference over stacked sets: untried, held, or not possible
        self.names = ring_names(h)         # the outputs, and with Spec.grads each listed input's gradient
        spec = h.spec
        # inputs a plain fill makes (no build= function, no captured replay): made a batch at a time.
        # A backward's sets are each prepared whole (their own upstream gradients, seeded with the
        # set) and referenced one at a time: torch.func.vmap does not map the reference's autograd
        self.stackable = (spec.build is None and not h.point.replay and not h.point.values and not h.point.layouts
                          and not h.backward)
        # kl.Calls(configs=): each letter's input sets prepared, called and referenced under its own config
        self.lites = {}
        calls = spec.repetition.calls if plan.declared else None
        if calls is not None and calls.configs:
            import dataclasses
            for letter in plan.letters:
                pt = dataclasses.replace(h.point, config=calls.config_of(letter))
                self.lites[letter] = Harness(spec, pt, h.device, guard=0, interpreted=h.interpreted)

    def _lite(self, s: int):
        """The harness of input set s: its letter's (kl.Calls(configs=)), else the point's."""
        return self.lites.get(self.plan.letters[s % len(self.plan.letters)], self.lite)

    def run(self):
        import torch
        plan, h = self.plan, self.h
        made, t0, stopped, per_call = 1, time.perf_counter(), "", 0.0
        lo, hi = BATCH["cpu" if h.device != "cuda" else "cuda"]
        ring = None
        while made < plan.calls:
            elapsed = time.perf_counter() - t0
            if elapsed >= plan.seconds:
                stopped = "seconds"
                break
            want = int(BATCH_SHARE * plan.seconds / per_call) if per_call else lo
            n = min(plan.calls - made, max(lo, min(hi, want)), self._room())
            if ring is None or ring.k < n:
                ring = Ring(h, max(n, ring.k * 2 if ring else n))
            ks = list(range(made, made + n))
            sids = [plan.set_of(k) for k in ks]
            b0 = time.perf_counter()
            self._keep(sids)
            outputs = self._calls(ring, ks, sids)
            refs = self._expected(sids)
            yield StreamBatch(first_call=made + 1, sets=sids, preps=[self.sets[s] for s in sids],
                              outputs={k: v for k, v in outputs.items() if k in refs}, refs=refs,
                              where=[plan.where(k) for k in ks], budget_s=plan.seconds)
            made += n
            per_call = (time.perf_counter() - b0) / n
        else:
            stopped = "calls"
        seconds = time.perf_counter() - t0
        used = max((plan.set_of(k) for k in range(made)), default=0) + 1
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        yield Streamed(calls=made, seconds=seconds, stopped=stopped, sets=used, pattern=plan.pattern, fresh=plan.fresh,
                       count=plan.calls, declared=plan.declared, batched=bool(self.batched))

    def _room(self) -> int:
        """Calls a batch may hold: its outputs (and their references, in float64) within RING_BYTES."""
        from ...core.sizes import nbytes_of, numel_of
        h = self.h
        per_call = sum(nbytes_of(h.spec, n, h.point.sizes, h.point.dtype_of) + 8 * numel_of(h.spec, n, h.point.sizes)
                       for n in self.names) or 1
        return max(1, RING_BYTES // per_call)

    def _keep(self, sids: list[int]) -> None:
        """The batch's input sets made (seeded from the point's seed), the others let go."""
        needed = set(sids)
        for s in [s for s in self.sets if s not in needed and (self.plan.fresh or s >= len(self.plan.letters))]:
            del self.sets[s]
            self.refs.pop(s, None)
            self.stacks.pop(s, None)
        new = [s for s in dict.fromkeys(sids) if s not in self.sets]
        if not new:
            return
        if self.stackable:
            self._make(new)
        else:
            for s in new:
                self.sets[s] = self._lite(s).prepare(seed=seed_of(self.h.point.seed, s))

    @timed(Stage.INPUTS)
    def _make(self, new: list[int]) -> None:
        """The new input sets as slices of one allocation a tensor, each set ALIGN-aligned and
        filled from its own generator (seed_of); their float64 copies for the reference, stacked."""
        import torch

        from ...gen.fill import fill_normal
        from ...gen.materialize import Inputs, reference_args, reference_dtypes, torch_dtype
        from ...core.sizes import dtype_of, shape_of
        from ..harness import Prepared
        h, spec, pt, b = self.h, self.h.spec, self.h.point, len(new)
        sizes = pt.sizes
        views = {}
        for name in spec.input_args:
            dtype, shape = dtype_of(spec, name, pt.dtype_of), shape_of(spec, name, sizes)
            t = torch.empty(0, dtype=torch_dtype(dtype))
            numel = math.prod(shape)
            per = -(-max(numel * t.element_size(), 1) // ALIGN) * ALIGN // t.element_size()   # elements a set
            size = t.element_size()
            buf = torch.empty(b * per + ALIGN // size, dtype=torch_dtype(dtype), device=h.device)
            at = (-buf.data_ptr() % ALIGN) // size                 # the first set ALIGN-aligned, and so every one
            views[name] = buf[at:at + b * per].view(b, per)[:, :numel].view(b, *shape)
        gen = torch.Generator(device=h.device)
        for j, s in enumerate(new):
            gen.manual_seed(seed_of(pt.seed, s))
            for name in spec.input_args:
                v = views[name][j]
                fill_normal(v, dtype_of(spec, name, pt.dtype_of), gen, spec.range_of(name, sizes))
                valid = spec.valid_of(name, sizes)
                if valid is not None and v.dim() and valid < v.shape[-1]:
                    v[..., valid:].zero_()                 # padding holds zeros, as rungs 1-2's
        stacked = reference_args(spec, Inputs(self._args(views, None)), None, h.device)
        for j, s in enumerate(new):
            inputs = Inputs(self._args(views, j), outs={})
            ref_args = [a[j] if isinstance(a, torch.Tensor) else a for a in stacked]
            self.sets[s] = Prepared(self._lite(s).point, inputs, ref_args, {}, [], None, reference_dtypes(spec, inputs),
                                    h.device)
            self.stacks[s] = (stacked, j)

    def _args(self, views: dict, j: int | None) -> list:
        """The kernel's arguments of set j (None: the stacked tensors), in declared order; an Out
        argument is None (the ring hands each call its slot)."""
        from ...core.spec import Size
        spec, sizes, args = self.h.spec, self.h.point.sizes, []
        for name, decl in spec.args.items():
            if name in views:
                args.append(views[name] if j is None else views[name][j])
            elif name in spec.out_args:
                args.append(None)
            else:
                args.append(sizes[decl.dim] if isinstance(decl, Size) else decl)
        return args

    def _calls(self, ring: Ring, ks: list[int], sids: list[int]) -> dict:
        """Every call of the batch through the launcher, each into its own slot of the ring."""
        import torch
        h = self.h
        ring.poison()
        fits = set(h.spec.out_args)
        for j, (k, s) in enumerate(zip(ks, sids, strict=True)):
            prep = self.sets[s]
            # with Spec.grads forward and backward on the set's own upstream gradients: this call's
            # gradients go to its slot before the next call on the same set overwrites prep's
            returned = h.call_with(ring.args(prep, j), prep.point.kwargs, f"call {k + 1:,}", prep)
            grads = dict(prep.backward.grads) if prep.backward is not None else None
            for n, t in ring.returned(prep, returned, grads).items():
                ring.slots[n][j].copy_(t)
                fits.add(n)
        if h.device == "cuda":
            try:
                torch.cuda.synchronize()
            except Exception as e:  # a fault the batch's kernels raised
                raise KernelError(e, f"calls {ks[0] + 1:,}..{ks[-1] + 1:,}") from e
        return {n: ring.slots[n][:len(ks)] for n in self.names if n in fits}

    @timed(Stage.REFERENCE)
    def _expected(self, sids: list[int]) -> dict:
        """Each call's reference, stacked in call order (name -> [calls, ...])."""
        import torch
        need = [s for s in dict.fromkeys(sids) if s not in self.refs]
        if need:
            self.refs.update(self._references(need))
        names = [n for n in self.names if all(isinstance(self.refs[s].get(n), torch.Tensor) for s in sids)]
        return {n: torch.stack([self.refs[s][n] for s in sids]) for n in names}

    def _references(self, need: list[int]) -> dict:
        """The references of these sets: those made together in one call of the reference over
        their stacked inputs where it maps (torch.func.vmap), the others one call a set."""
        found, groups = {}, {}
        for s in need:
            if s in self.stacks and self.batched is not False:
                groups.setdefault((id(self.stacks[s][0]), self._lite(s).point.config), []).append(s)
        for group in groups.values():
            if len(group) > 1:
                found.update(self._vmapped(group) or {})
        for s in need:
            if s not in found:
                found[s] = self._plain(s)
        return found

    def _plain(self, s: int) -> dict:
        return self._lite(s).expected(self.sets[s]).refs

    def _vmapped(self, group: list[int]) -> dict | None:
        """The reference once over the group's stacked inputs, or None (the stream then calls it
        once a set from here on): a reference torch.func.vmap cannot map (data-dependent control
        flow, .item(), random ops), or one that, mapped, gives other values than plain calls on the
        first and last set of the first group."""
        import torch
        stacked = self.stacks[group[0]][0]
        at = torch.tensor([self.stacks[s][1] for s in group])
        args = [a.index_select(0, at.to(a.device)) if isinstance(a, torch.Tensor) else a for a in stacked]
        dims = tuple(0 if isinstance(a, torch.Tensor) else None for a in args)
        try:
            kw = self.h.spec.reference_keywords(self._lite(group[0]).point.config)
            out = torch.func.vmap(lambda *a: self.h._split(self.h.spec.reference(*a, **kw)), in_dims=dims)(*args)
        except Exception:  # noqa: BLE001 - a reference vmap cannot map is called once a set
            return self._refuse()
        if not isinstance(out, dict) or not all(isinstance(out.get(n), torch.Tensor) for n in self.names):
            return self._refuse()
        refs = {s: {n: out[n][j] for n in self.names} for j, s in enumerate(group)}
        if self.batched is None:
            for j in (0, len(group) - 1):
                plain = self._plain(group[j])
                if not all(_close(refs[group[j]][n], plain.get(n)) for n in self.names):
                    return self._refuse()
            self.batched = True
        return refs

    def _refuse(self) -> None:
        self.batched = False
        return None


def _close(a, b) -> bool:
    import torch
    if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.is_floating_point():
        return bool(torch.equal(a, b))
    a64, b64 = a.double(), b.double()
    finite = b64.isfinite()
    if not bool((a64.isnan() == b64.isnan()).all()) or not bool((a64[~finite & ~b64.isnan()] == b64[~finite & ~b64.isnan()]).all()):
        return False
    scale = float(b64[finite].abs().max()) if bool(finite.any()) else 0.0
    return bool(((a64[finite] - b64[finite]).abs() <= VERIFY_RTOL * (b64[finite].abs() + scale)).all())


MODE = Calls()
