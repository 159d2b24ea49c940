"""Launchers with state for rung 5's stream (Spec.calls), each with a correct twin, and a rowsum
with a documented fast path for the tolerance of a config (kl.Config). Plain torch: thousands of
calls a second on the CPU.

- ring_*: a row sum accumulated into a workspace from a ring of RING slots, one slot a call
  (a decode loop keeps a step's result alive while the next step runs). The buggy launcher
  zeroes a slot only when it allocates it: from call RING + 1 on every call adds onto the sum a
  slot held RING calls before. The fixed one zeroes the slot it takes, every call.
- cache_*: the model calls it twice per step on the same logits ("AA"), so the launcher keeps
  its last CACHE results and answers a repeated call from them. The buggy launcher keys them by
  the input's shape and its first element rounded to float16: a new input whose first element
  rounds like one of the last CACHE gets that input's result (about 1 call in 300 on new normal
  inputs). The fixed one keys them by the tensor itself and its version counter, and holds the
  tensor, so that its address cannot be reused while it is cached.
- rowsum_*: precise=True sums in float64; precise=False, a documented fast path accurate to
  ~1e-3 of the row's size, sums the values rounded to bfloat16. rowsum_bad's precise path has
  the same rounding (a bug: the precise path must be float32-accurate).
"""
import torch

import kladder as kl

RING = 1024
CACHE = 24


class RingRowsum:
    def __init__(self, zero_every_call: bool):
        self.zero_every_call, self.ring, self.step = zero_every_call, {}, 0

    def __call__(self, x):
        slot = self.step % RING
        self.step += 1
        ws = self.ring.get(slot)
        if ws is None or ws.shape != x.shape[:-1] or ws.dtype != x.dtype:
            ws = self.ring[slot] = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
        elif self.zero_every_call:
            ws.zero_()
        ws += x.sum(-1)
        return ws.clone()


class CachedRowsum:
    def __init__(self, keyed_by_tensor: bool):
        self.keyed_by_tensor, self.recent = keyed_by_tensor, []

    def key(self, x):
        if self.keyed_by_tensor:
            return (id(x), x._version, x.shape, x.dtype)
        return (x.shape, x.dtype, float(x.reshape(-1)[0].to(torch.float16)))

    def __call__(self, x):
        k = self.key(x)
        for key, _, y in self.recent:
            if key == k:
                return y.clone()
        y = x.sum(-1)
        self.recent = (self.recent + [(k, x, y)])[-CACHE:]     # x held: its id stays its own while cached
        return y.clone()


def _rowsum_spec(name, kernel, **over):
    fields = dict(args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M", like="x"),
                  dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256, tile=16)})
    fields.update(over)
    return kl.Spec(name, kernel=kernel, reference=lambda x: x.sum(-1), **fields)


AABB = kl.Calls(pattern="AABB", fresh=True, count=3000)
AA = kl.Calls(pattern="AA", fresh=True, count=4000)

ring_bad = _rowsum_spec("ring_bad", RingRowsum(zero_every_call=False), repetition=kl.Repetition(calls=AABB))
ring_good = _rowsum_spec("ring_good", RingRowsum(zero_every_call=True), repetition=kl.Repetition(calls=AABB))
ring_undeclared = _rowsum_spec("ring_undeclared", RingRowsum(zero_every_call=False))
cache_bad = _rowsum_spec("cache_bad", CachedRowsum(keyed_by_tensor=False), repetition=kl.Repetition(calls=AA))
cache_good = _rowsum_spec("cache_good", CachedRowsum(keyed_by_tensor=True), repetition=kl.Repetition(calls=AA))


# ---- a tolerance per config (kl.Config)
def _bf16_sum(x):
    return x.to(torch.bfloat16).to(torch.float32).sum(-1)


def rowsum_good(x, precise=True):
    return x.double().sum(-1).to(x.dtype) if precise else _bf16_sum(x)


def rowsum_bad(x, precise=True):
    return _bf16_sum(x)            # the precise path rounds too: wrong at float32's accuracy


FAST = kl.Config({"precise": False}, tolerance={"float32": (1e-2, 1e-2)})
with_config_tolerance = _rowsum_spec("with_config_tolerance", rowsum_good, configs=[FAST, {"precise": True}])
without_config_tolerance = _rowsum_spec("without_config_tolerance", rowsum_good,
                                        configs=[{"precise": False}, {"precise": True}])
precise_bug = _rowsum_spec("precise_bug", rowsum_bad, configs=[FAST, {"precise": True}])
