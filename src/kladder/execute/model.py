"""The model mode (rung 8): the model's score with the kernel in its slot against the
baseline's, both on the same fixed problems. A drop beyond Spec.model_tolerance fails and the
finding shows both scores and a few answers side by side."""
from __future__ import annotations

SHOWN = 4


class Model:
    name = "model"

    def run(self, h) -> tuple[list, str]:
        from ..compare import Finding
        from ..trial import KernelError, SpecBroken
        spec, pt = h.spec, h.point
        slot, fn = spec.slot_target()
        if isinstance(slot, str):
            import kladder.model as km
            if slot not in km.SLOTS:
                raise SpecBroken(f"Spec.slot {slot!r}: kladder's model has the slots {', '.join(km.SLOTS)}")
            dtype = dict(pt.config).get("model_dtype", "float32")
            n = dict(pt.config).get("problems", 64)
            try:
                base = km.evaluate(None, n=n, device=h.device, dtype=dtype, seed=pt.seed % 1000)
            except Exception as e:  # noqa: BLE001
                raise SpecBroken(f"the baseline model run failed: {type(e).__name__}: {e}") from e
            try:
                got = km.evaluate({slot: fn}, n=n, device=h.device, dtype=dtype, seed=pt.seed % 1000)
            except Exception as e:  # noqa: BLE001
                raise KernelError(e, f"the model with the kernel in `{slot}`") from e
            b, k = base.score, got.score
            rows = [f"{p}{want} got {g}" + ("" if g == want else "  <- wrong") for p, want, g in got.samples[:SHOWN]]
            rise = got.nll / base.nll - 1 if base.nll > 0 else 0.0
            rise_text = f"{rise:+.1%}" if abs(rise) < 10 else f"x{got.nll / base.nll:.3g}"
            detail = (f"exact match {k:.4f} with the kernel vs {b:.4f} baseline; the right answers' NLL "
                      f"{got.nll:.3e} vs {base.nll:.3e} nats/token ({rise_text}); {n} problems, {dtype}; "
                      f"logits {got.gain:+.2%} along the baseline's, drift {got.drift:.2e}")
            if rise > spec.model_nll_tolerance and b - k <= spec.model_tolerance:
                msg = (f"the model's answers lost likelihood: the right answers' negative log-likelihood rose {rise:+.1%} "
                       f"({base.nll:.3e} -> {got.nll:.3e} nats/token; {spec.model_nll_tolerance:.0%} allowed) with the kernel "
                       f"in `{slot}`, while exact match stayed {k:.4f} (baseline {b:.4f}): the errors lean one way and "
                       f"compound through the layers. {detail}")
                return [Finding("model", "nll", msg, pattern=f"NLL {rise:+.1%}", max_abs_err=rise,
                                extra={"baseline": base.nll, "kernel": got.nll, "samples": rows},
                                call="model run with the kernel")], detail
        else:
            replacement = slot.wrap(fn) if getattr(slot, "wrap", None) else fn
            try:
                b = slot.score(None)
            except Exception as e:  # noqa: BLE001
                raise SpecBroken(f"the user model's baseline evaluation failed: {type(e).__name__}: {e}") from e
            try:
                k = slot.score(replacement)
            except Exception as e:  # noqa: BLE001
                raise KernelError(e, f"the user model with the kernel in {getattr(slot, 'target', '?')}") from e
            worst = sorted(getattr(slot, "samples", []), key=lambda s: s[-1] if isinstance(s, tuple) else 0)
            rows = [" ".join(map(str, s)) if isinstance(s, tuple) else str(s) for s in worst[:SHOWN]]
            detail = f"score {k:.4f} with the kernel vs {b:.4f} baseline ({slot.target})"
        drop = b - k
        if drop > spec.model_tolerance:
            msg = (f"the model's score fell from {b:.4f} to {k:.4f} (a drop of {drop:.4f}; "
                   f"{spec.model_tolerance} allowed) with the kernel in its slot. {detail}")
            if rows:
                msg += ". Answers: " + "; ".join(rows)
            return [Finding("model", "score", msg, pattern=f"score {b:.3f} -> {k:.3f}", max_abs_err=drop,
                            extra={"baseline": b, "kernel": k, "samples": rows}, call="model run with the kernel")], detail
        return [], detail
