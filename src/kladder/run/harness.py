"""The three things every execution mode does with a point: prepare its inputs, call the
kernel, run the reference. Calling only: nothing here judges (checks/ does that).

prepare: seeded inputs in guarded buffers and the reference's copies, taken before the call
(a kernel may scribble on its inputs), on the host when the device is short; call: one call,
its exception wrapped as the kernel's (and, under Triton's interpreter, which of its known
defects the call touched); expected: the reference on the prepared copies; peers: the honest
peer, asked only for the outputs whose verdict it decides (checks/peer.py)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..checks import inputs as input_check
from ..checks import peer as peer_math
from ..checks.values import Expected
from ..gen.materialize import GUARD_BYTES, Inputs, materialize, reference_args, reference_dtypes
from ..core.outcome import KernelError, NoteKind, RowsChecked, SpecBroken, error_facts
from ..core.point import Point
from ..gen.rows import plan_rows, select_key
from ..core.sizes import ITEMSIZE, dtype_of, is_big, numel_of, shape_of, total_bytes
from ..core.spec import FLOAT_DTYPES, Spec, grad_name, upstream_name
from ..gen import upstream as upstream_mod
from . import interpreter, modes
from .faults import is_oom
from .forkclient import Children
from .guarded_alloc import KERNEL_GUARD_BYTES, guarding
from .modes.base import call_once, call_raw
from .settings import torch_setting
from .stages import Stage, timed

# The reference (its float64 copies, its output, a perturbed draw) may take this many times the
# kernel's own bytes on the device, so that a point's peak stays within 3x the kernel's inputs
# and outputs (bench/memory.py) when the device is short; past it, at a big point, it runs on the
# host only if it would also take more than REFERENCE_FREE_SHARE of the free memory. The host is
# the slow path: a float64 GEMV over a 2 GiB weight takes ~1 ms on the H200 and ~0.5 s on the
# host, and the honest peer's 16 draws ~2 s each there (their Gaussians alone; bench/big_point.py
# measured 33 s of peers at a 128 MiB weight on the 2-core CPU, 2,300 x the reference's call).
REFERENCE_DEVICE_SHARE = 1.5
REFERENCE_FREE_SHARE = 0.25
ACCUMULATE_TIMES = 2


@dataclass
class Prepared:
    point: Point
    inputs: Inputs
    ref_args: list
    select: dict
    row_ids: list
    rows: RowsChecked | None
    arg_dtypes: list = field(default_factory=list)   # each reference input's dtype as the kernel got it
    ref_device: str = ""
    snapshot: list = field(default_factory=list)     # the inputs as passed, compared after the call (checks/inputs.py)
    allocated: list = field(default_factory=list)    # the last call's own allocations (guarded_alloc.Allocation)
    backward: Backward | None = None                 # Spec.grads: the backward's inputs and, after the call, its gradients


@dataclass
class Backward:
    """The backward of one call (Spec.grads): the upstream gradient of each floating output (as
    the kernel gets it, and the reference's copies), what each input's `.grad` held before the
    call (an accumulation point; else empty), and, after the call, each listed input's gradient.
    kladder's own gradient buffers (upstream, held) live in guarded storage (`guarded`, by the
    name a finding gives them: 'upstream y', 'grad of w'), and each upstream gradient's values as
    passed are kept (`snapshot`): a backward must leave its grad_output as it was (checks/inputs.py)."""
    upstream: dict                                   # output name -> grad_output, in the output's dtype
    held: dict = field(default_factory=dict)         # input name -> .grad before the call (mode "accumulate")
    times: int = 1                                   # backward calls on one retained graph
    ref_extra: list = field(default_factory=list)    # the reference's copies of upstream, then held, in that order
    extra_dtypes: list = field(default_factory=list)
    grads: dict = field(default_factory=dict)        # "grad of w" -> the kernel's gradient (None: it computed none)
    guarded: dict = field(default_factory=dict)      # 'upstream y' / 'grad of w' -> materialize.Guarded
    snapshot: dict = field(default_factory=dict)     # output name -> a copy of its upstream gradient as passed


@dataclass
class Peer:
    """The honest peer of one output: the reference run in the kernel's precision (`kernel`, or
    why it could not run: `facts`), and the rounding spread of the float64 reference."""
    kernel: object = None
    spread: object = None
    facts: dict = field(default_factory=dict)
    unit: float = 0.0           # the inputs' largest unit roundoff: spread / unit is the terms' size
    rounded: object = None      # a backward's spread with its own arithmetic rounded too (checks/peer.backward_rounding)
    more: object = None         # () -> [(peer, its float64 reference)]: more correct runs, asked at a near miss


class Harness:
    def __init__(self, spec: Spec, point: Point, device: str, guard: int = GUARD_BYTES, interpreted: bool = False,
                 children: Children | None = None):
        self.spec, self.point, self.device = spec, point, device
        self.children = children or Children()    # what the modes' own processes need (the worker's request)
        self.interpreted = interpreted        # Triton under its interpreter (run/interpreter.on, asked once by the worker)
        self.guard = guard                   # guard bytes around every tensor (0 under compute-sanitizer)
        self.touched: set[str] = set()      # the interpreter's known defects the kernel's calls touched
        self.backward = bool(spec.grads) and modes.traits(point.mode).backward
        self.calling: Prepared | None = None  # the inputs of the call under way or last made (a debugging run reads them)

    @timed(Stage.INPUTS)
    def prepare(self, point: Point | None = None, seed: int | None = None, outs_from: Prepared | None = None) -> Prepared:
        """With `outs_from`, Out args reuse that call's buffers as they are (not re-poisoned)."""
        pt = point or self.point
        if seed is not None:
            pt = dataclasses.replace(pt, seed=seed)
        try:
            inputs = materialize(self.spec, pt, self.device, reuse=outs_from.inputs if outs_from else None,
                                 guard=self.guard)
            # a weight's gradient sums over every row: there a backward's reference sees them all (rows.py)
            select, row_ids, rows = plan_rows(self.spec, pt, self.device, self.backward)
            where = reference_device(self.spec, pt, self.device, select)
            by_arg = {i: v for i, v in select.items() if isinstance(i, int)}
            ref_args = reference_args(self.spec, inputs, by_arg, where)
            # the forward alone may leave anything in an input it overwrites with its gradient (mutated='gradient')
            snapshot = input_check.snapshot(self.spec, inputs, pt, () if self.backward else self.spec.written_in_forward(pt))
            backward = self._backward_inputs(pt, where, select) if self.backward else None
        except Exception as e:  # every failure here is kladder's or the spec's
            if is_oom(e):
                raise
            raise SpecBroken(NoteKind.INPUTS_FAILED, **error_facts(e, whole=True)) from e
        return Prepared(pt, inputs, ref_args, select, row_ids, rows, reference_dtypes(self.spec, inputs), where, snapshot,
                        backward=backward)

    def _backward_inputs(self, pt: Point, where: str, select: dict) -> Backward:
        """The upstream gradients (and at an accumulation point what `.grad` held), guarded for the
        kernel; the reference's copies of them on `where`, of the rows `select` picked (rows.py)."""
        import torch
        guarded = {upstream_name(n): _guarded_copy(upstream_name(n), t, self.device, self.guard)
                   for n, t in upstream_mod.upstream(self.spec, pt, self.device).items()}
        if pt.mode == "accumulate":
            guarded.update({grad_name(n): _guarded_copy(grad_name(n), t, self.device, self.guard)
                            for n, t in upstream_mod.held(self.spec, pt, self.device).items()})
        ups = {n: guarded[upstream_name(n)].view for n in self.spec.outputs if upstream_name(n) in guarded}
        held = {n: guarded[grad_name(n)].view for n in self.spec.grads if grad_name(n) in guarded}
        extra = list(ups.values()) + list(held.values())
        keys = [select_key(self.spec, n) for n in ups] + [select_key(self.spec, grad_name(n)) for n in held]
        ref_dtype = getattr(torch, self.spec.reference_dtype)

        def ref_copy(t, key):
            if key in select:
                axis, rows = select[key]
                t = t.index_select(axis, rows.to(t.device))
            return t.to(where, ref_dtype)
        return Backward(ups, held, ACCUMULATE_TIMES if held else 1, [ref_copy(t, k) for t, k in zip(extra, keys, strict=True)],
                        [str(t.dtype).removeprefix("torch.") for t in extra], guarded=guarded,
                        snapshot={n: t.clone() for n, t in ups.items()})

    @timed(Stage.KERNEL)
    def call(self, prep: Prepared, label: str = "", runner=None):
        """One call of the kernel (through `runner`, the mode's, when given); what it allocates
        itself is guarded too (guarded_alloc.py) and kept on `prep` for the judge."""
        self.calling = prep
        with interpreter.watch() as seen, guarding(self.device, KERNEL_GUARD_BYTES if self.guard else 0) as allocated:
            prep.allocated = allocated
            try:
                if prep.backward is not None:
                    return self._forward_backward(prep, runner)
                if runner is not None:
                    return runner(self.spec.kernel, prep.inputs.args, prep.point.kwargs)
                return call_once(self.spec.kernel, prep.inputs.args, prep.point.kwargs)
            except (Exception, KeyboardInterrupt, SystemExit) as e:  # the kernel's own: a finding
                # a worker never receives a Ctrl-C (it runs in a session of its own), so a
                # KeyboardInterrupt here was raised by the kernel; sys.exit ends the process
                raise KernelError(e, label) from e
            finally:
                self.touched |= seen

    def _forward_backward(self, prep: Prepared, runner=None, args: list | None = None):
        """The forward with every listed input a leaf that requires grad (its `.grad` holding
        `held` at an accumulation point), then backward through what it returned with each
        output's upstream gradient (`times` calls on one retained graph). The gradients land
        on prep.backward.grads; the outputs come back detached."""
        import torch
        args = prep.inputs.args if args is None else args
        bw, named = prep.backward, dict(zip(self.spec.args, args, strict=True))
        leaves = {n: named[n] for n in self.spec.grads}
        for n, leaf in leaves.items():
            leaf.requires_grad_(True)
            leaf.grad = bw.held.get(n)           # kladder's guarded buffer (accumulate), added to in place
        try:
            with torch.enable_grad():
                returned = (runner or call_once)(self.spec.kernel, args, prep.point.kwargs)
                outs = self.outputs(prep, returned, args)
                pairs = [(n, outs[n], g) for n, g in bw.upstream.items()
                         if isinstance(outs.get(n), torch.Tensor) and outs[n].requires_grad]
                if not pairs:
                    raise TypeError("the kernel's outputs carry no gradient (none requires grad): Spec(grads=...) says "
                                    "its launcher is differentiable (a torch.autograd.Function)")
                # a backward that overwrites its upstream gradient by design (grad_overwritten) gets a
                # fresh copy for each call but the last, whose buffer is kladder's (judged after it)
                over = set(self.spec.overwritten_at(prep.point))
                for k in range(bw.times):
                    last = k + 1 == bw.times
                    torch.autograd.backward([o for _, o, _ in pairs], [g if last or n not in over else g.clone()
                                                                      for n, _, g in pairs], retain_graph=not last)
            # a graph capture or rung 5's ring orders the work itself (call_raw): no synchronize there
            if runner is not call_raw and torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()
            bw.grads = {grad_name(n): None if leaf.grad is None else leaf.grad.detach() for n, leaf in leaves.items()}
        finally:
            for leaf in leaves.values():
                leaf.grad = None
                leaf.requires_grad_(False)
        return _detached(returned)

    @timed(Stage.KERNEL)
    def call_with(self, args: list, kwargs: dict, label: str, prep: Prepared | None = None):
        """One call on the given arguments, with no synchronize (rung 5 calls into a ring of
        output buffers and orders the work itself); its exception wrapped as the kernel's. With
        `prep` at a backward point, forward and backward on `args` (with prep's upstream
        gradients): the gradients land on prep.backward.grads."""
        with interpreter.watch() as seen:
            try:
                if prep is not None and prep.backward is not None:
                    return self._forward_backward(prep, call_raw, args)
                return call_raw(self.spec.kernel, args, kwargs)
            except Exception as e:  # the kernel's own exception is a finding
                raise KernelError(e, label) from e
            finally:
                self.touched |= seen

    def outputs(self, prep: Prepared, returned, args: list | None = None) -> dict:
        """Outputs by name: Out args from their buffers (from `args` when the call had its own:
        rung 5's ring), returned tensors from the return value (what cannot be read from it is
        missing; checks.contract.arity says why)."""
        outputs = dict(prep.inputs.outs)
        if args is not None:
            outputs.update({n: a for n, a in zip(self.spec.args, args, strict=True) if n in self.spec.out_args})
        names = list(self.spec.returned)
        if len(names) == 1:
            outputs[names[0]] = returned
        elif isinstance(returned, dict):
            outputs.update({n: returned.get(n) for n in names})
        elif isinstance(returned, (tuple, list)) and len(returned) == len(names):
            outputs.update(zip(names, returned, strict=True))
        if prep.backward is not None and prep.backward.grads:
            outputs.update(prep.backward.grads)
        return outputs

    @timed(Stage.REFERENCE)
    def expected(self, prep: Prepared) -> Expected:
        """The reference's outputs by name, and on a GPU, for floating outputs of 32 bits or
        fewer, their copies rounded to the output's dtype: the comparison's fast pass reads those
        (as many bytes as the output) and the float64 reference only where it cannot decide
        (checks/fast.py)."""
        import torch
        args, mutated = self._mutable_args(prep)
        try:
            refs = self._reference(args + self._extra(prep))
        except Exception as e:  # e.g. an op without a kernel for that dtype on this device
            if is_oom(e):
                raise                                # the point could not run for memory: not the spec's fault
            raise SpecBroken(NoteKind.REFERENCE_RAISED, **error_facts(e)) from e
        refs.update(mutated)                         # a mutated input: the reference's copy, as its call left it
        lo = {}
        if self.device == "cuda" and not self.interpreted:
            for n, r in refs.items():
                dt = dtype_of(self.spec, n, prep.point.dtype_of) if n in self.spec.outputs else ""
                if dt in ("float32", "float16", "bfloat16") and isinstance(r, torch.Tensor) and r.is_cuda:
                    lo[n] = r.detach().to(getattr(torch, dt))
        return Expected(refs, lo)

    def _mutable_args(self, prep: Prepared) -> tuple[list, dict]:
        """The reference's arguments, with a fresh copy of each input the spec declares mutated
        anywhere (the reference writes it in place; prep.ref_args stay as passed for the peers),
        and those written at this point (their copies as the reference left them are judged)."""
        names = [n for n in self.spec.args if n not in self.spec.out_args]
        args, mutated, writes = list(prep.ref_args), {}, self.spec.mutated_at(prep.point)
        for i, n in enumerate(names):
            if n in self.spec.mutated_args and self.spec.args[n].mutated != "backward" and hasattr(args[i], "clone"):
                args[i] = args[i].clone()
                if n in writes:
                    mutated[n] = args[i]
        return args, mutated

    @timed(Stage.PEERS)
    def peers(self, prep: Prepared, needs: dict, refs: dict) -> dict:
        """The honest peer of each output in `needs` (name -> "values" | "bias"): the reference on
        the inputs as the kernel got them, cast to the output's dtype, and for "values" the
        spread of the reference's outputs over SPREAD_DRAWS draws of per-element rounding (fewer
        where `needs.decided(spreads, unit, peers)`, when given, says the verdict is already
        the pass: checks/peer.CHECK_DRAWS), and `more`: further correct runs for a near miss."""
        import torch
        unit = peer_math.unit_of(prep.arg_dtypes)
        found = {n: Peer(unit=unit) for n in needs}
        args, dtypes = prep.ref_args + self._extra(prep), prep.arg_dtypes + self._extra(prep, dtypes=True)
        try:
            low = self._reference(peer_math.lowered(args, dtypes))
        except Exception as e:  # a perturbed input the reference refuses: no spread
            if is_oom(e):
                raise
            low, why = {}, {"error": type(e).__name__, "text": error_facts(e)["text"]}
        else:
            why = {}
        for n, p in found.items():
            dtype = dtype_of(self.spec, n, prep.point.dtype_of)
            got = low.get(n)
            if isinstance(got, torch.Tensor) and got.is_floating_point() and tuple(got.shape) == tuple(refs[n].shape):
                p.kernel = got.detach().to(getattr(torch, dtype))
                p.facts = {"dtype": dtype}
                p.more = self._more_runs(prep, n, refs, args, dtypes)
            else:
                p.facts = why or {"error": "no tensor", "text": f"the reference returned {type(got).__name__}"}
        spread_of = [n for n, w in needs.items() if w == "values"]
        if spread_of:
            decided = getattr(needs, "decided", None)
            kernels = {n: p.kernel for n, p in found.items()}
            done = decided and (lambda sp: decided(sp, unit, kernels))
            for n, sp in self._spread(prep, spread_of, refs, done, args, dtypes).items():
                found[n].spread = sp
            # a backward's terms are not its inputs: unless the inputs' spread already passes every
            # waiting output, the draws again with the reference's own arithmetic rounded (its
            # budget only adds to the inputs': the peer's K stays measured against the inputs' spread)
            if self.backward and not (done and done({n: found[n].spread for n in spread_of})):
                for n, sp in self._spread(prep, spread_of, refs, None, args, dtypes, rounded=True).items():
                    found[n].rounded = sp
        return found

    def _spread(self, prep: Prepared, names: list, refs: dict, decided, args: list, dtypes: list,
                rounded: bool = False) -> dict:
        import torch
        gen = torch.Generator(device=_device_of(prep.ref_args, prep.ref_device)).manual_seed(
            (prep.point.seed ^ peer_math.SEED_SALT) & 0xFFFFFFFF)
        acc = {n: None for n in names}
        unit = peer_math.acc_unit(peer_math.unit_of(prep.arg_dtypes))
        try:
            for k in range(1, peer_math.SPREAD_DRAWS + 1):
                rounding = peer_math.backward_rounding(gen, unit) if rounded else None
                drawn = self._reference(peer_math.perturbed(args, dtypes, gen), rounding)
                for n in names:
                    acc[n] = peer_math.add_draw(acc[n], drawn.get(n), refs[n])
                del drawn
                if decided is not None and k in peer_math.CHECK_DRAWS and k < peer_math.SPREAD_DRAWS:
                    # the spread so far as a lower bound of the 16 draws' (the rest moving nothing)
                    low = {n: peer_math.spread(a, peer_math.SPREAD_DRAWS) for n, a in acc.items()}
                    if decided(low):
                        return low
        except Exception as e:
            if is_oom(e):
                raise
            return {}
        return {n: peer_math.spread(a, peer_math.SPREAD_DRAWS) for n, a in acc.items()}

    def _more_runs(self, prep: Prepared, name: str, refs: dict, all_args: list, all_dtypes: list):
        """More correct runs of output `name` in the kernel's precision, made when asked (a near
        miss, checks/peer.SETTLE_MARGIN): the reference on the host when it ran on a GPU (another
        backend's summation order), else on one thread (another split of its reductions), against
        the float64 reference; and PEER_RUNS runs on a fresh rounding of the inputs, each against
        the float64 reference of those inputs. A run the reference refuses is left out."""
        import torch
        dtype = getattr(torch, dtype_of(self.spec, name, prep.point.dtype_of))

        def one(args: list, ref):
            got = self._reference(args).get(name)
            if isinstance(got, torch.Tensor) and got.is_floating_point() and tuple(got.shape) == tuple(ref.shape):
                return got.detach().to(dtype).to(ref.device)
            return None

        def more() -> list:
            runs = []
            low = peer_math.lowered(all_args, all_dtypes)
            try:
                if any(getattr(a, "is_cuda", False) for a in low):
                    got = one([a.cpu() if isinstance(a, torch.Tensor) else a for a in low], refs[name])
                else:
                    with torch_setting("num_threads", 1 if torch.get_num_threads() > 1 else 2):
                        got = one(low, refs[name])
                if got is not None:
                    runs.append((got, refs[name]))
            except Exception as e:  # a reference bound to its device: the fresh roundings alone
                if is_oom(e):
                    raise
            gen = torch.Generator(device=_device_of(prep.ref_args, prep.ref_device)).manual_seed(
                (prep.point.seed ^ peer_math.RUNS_SALT) & 0xFFFFFFFF)
            try:
                for _ in range(peer_math.PEER_RUNS):
                    fresh = peer_math.rerounded(all_args, all_dtypes, gen)
                    ref = self._reference(fresh).get(name)
                    got = one(peer_math.lowered(fresh, all_dtypes), ref) if isinstance(ref, torch.Tensor) else None
                    if got is not None:
                        runs.append((got, ref.detach()))
            except Exception as e:  # a run the reference refuses: the runs so far
                if is_oom(e):
                    raise
            return runs
        return more

    def _extra(self, prep: Prepared, dtypes: bool = False) -> list:
        """The backward's inputs the reference takes after its own (upstream gradients, then what
        `.grad` held): the honest peer lowers and perturbs them as it does every input."""
        if prep.backward is None:
            return []
        return list(prep.backward.extra_dtypes if dtypes else prep.backward.ref_extra)

    def _reference(self, args: list, rounding=None) -> dict:
        """The reference's outputs by name on `args` (its own, then the backward's: _extra), and with
        Spec.grads each listed input's gradient by torch's autograd through the reference (under
        `rounding`, a spread's draw: checks/peer.backward_rounding)."""
        if not self.backward:
            return self._split(self.spec.reference(*args, **self.spec.reference_keywords(self.point.config)))
        return reference_grads(self.spec, self.point, args, self._split, rounding)

    def _split(self, ref) -> dict:
        names = list(self.spec.outputs)
        if len(names) == 1:
            return {names[0]: ref}
        if isinstance(ref, dict):
            return ref
        return dict(zip(names, ref, strict=False))


def reference_grads(spec: Spec, point: Point, args: list, split, rounding=None) -> dict:
    """The reference (plain torch, written once) differentiated by autograd: its outputs, then
    'grad of w' for each listed input = held + times x the vector-Jacobian product with the
    upstream gradients (zeros where the reference does not use the input). `rounding`: a dispatch
    mode the forward and the backward run under (a spread's draw)."""
    import contextlib

    import torch
    names = [n for n in spec.args if n not in spec.out_args]
    own, extra = list(args[:len(names)]), list(args[len(names):])
    for i, n in enumerate(names):
        if n in spec.grads:
            own[i] = own[i].detach().requires_grad_(True)
    leaves = [own[names.index(n)] for n in spec.grads]
    with torch.enable_grad(), rounding if rounding is not None else contextlib.nullcontext():
        outs = split(spec.reference(*own, **spec.reference_keywords(point.config)))
    floating = [n for n in spec.outputs if dtype_of(spec, n, point.dtype_of) in FLOAT_DTYPES]   # as upstream.upstream
    ups, held = extra[:len(floating)], extra[len(floating):]
    pairs = [(outs[n], g.to(outs[n].dtype)) for n, g in zip(floating, ups, strict=True)
             if isinstance(outs.get(n), torch.Tensor) and outs[n].requires_grad]
    with rounding if rounding is not None else contextlib.nullcontext():
        got = (torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
               if pairs else [None] * len(leaves))
    found = {n: o.detach() if isinstance(o, torch.Tensor) else o for n, o in outs.items()}
    accumulate = point.mode == "accumulate"
    times = ACCUMULATE_TIMES if accumulate else 1
    for k, (n, leaf, g) in enumerate(zip(spec.grads, leaves, got, strict=True)):
        g = torch.zeros_like(leaf) if g is None else g.detach()
        found[grad_name(n)] = (held[k].to(g.dtype) + times * g) if accumulate else g
    return found


def _guarded_copy(name: str, t, device, guard: int):
    """`t` (an upstream gradient in its layout, or what `.grad` holds) copied into guarded storage
    (materialize.guarded_like), keeping its strides; a broadcast one (stride 0) as its one stored
    row, expand-ed again."""
    from ..gen.materialize import Guarded, guarded_like
    if not any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride(), strict=True)):
        return guarded_like(name, t, device, guard)
    stored = t[tuple(slice(0, 1) if st == 0 else slice(None) for st in t.stride())]
    g = guarded_like(name, stored, device, guard)
    return Guarded(name, g.buf, g.view.expand(t.shape), guard)


def _detached(returned):
    """What the kernel returned, with no autograd graph attached (the checks read plain tensors)."""
    import torch
    if isinstance(returned, torch.Tensor):
        return returned.detach()
    if isinstance(returned, (tuple, list)):
        return type(returned)(_detached(r) for r in returned)
    if isinstance(returned, dict):
        return {k: _detached(v) for k, v in returned.items()}
    return returned


def _device_of(args: list, fallback: str):
    for a in args:
        if hasattr(a, "device"):
            return a.device
    return fallback or "cpu"


def reference_device(spec: Spec, point: Point, device: str, select: dict) -> str:
    """Where the reference runs: the point's device, or the host when its float64 copies, its
    output and one perturbed draw would take more than half the free device memory, or, at a big
    point (2^31 bytes and up), more than REFERENCE_DEVICE_SHARE x the kernel's own bytes and more
    than REFERENCE_FREE_SHARE of the free memory. A small point's reference stays on the device
    however it compares to the kernel's bytes (a float64 attention on the host would take minutes)."""
    if device != "cuda" or point.mode == "model":
        return device
    import torch
    need = 0
    for name in spec.all_tensors:
        dtype = dtype_of(spec, name, point.dtype_of)
        width = 8 if dtype in FLOAT_DTYPES else ITEMSIZE[dtype]
        need += 2 * width * _selected_numel(spec, point, name, select)   # the copy (or output), and a draw
    free, _ = torch.cuda.mem_get_info()
    if need > 0.5 * free:
        return "cpu"
    big = is_big(spec, point.sizes) and need > REFERENCE_DEVICE_SHARE * total_bytes(spec, point.sizes, point.dtype_of)
    return "cpu" if big and need > REFERENCE_FREE_SHARE * free else device


def _selected_numel(spec: Spec, point: Point, name: str, select: dict) -> int:
    """Elements of tensor `name` the reference sees: all, or the rows rows.py picked."""
    key = select_key(spec, name)
    numel = numel_of(spec, name, point.sizes)
    if key not in select:
        return numel
    axis, rows = select[key]
    return numel // max(shape_of(spec, name, point.sizes)[axis], 1) * len(rows)
