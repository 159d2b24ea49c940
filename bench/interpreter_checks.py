"""Triton's interpreter with and without work whose result nothing reads, one kind at a time
(`--what`): `checks`, its dead overflow checks (run/interpreter.without_dead_checks); `lang`, its
patch of triton.language repeated at every @triton.jit helper's call inside a kernel
(run/interpreter.patch_lang_once). Zoo cases' points at their own rung (the buggy kernel's and the
twin's), each point run through the trial (run/trial.run_point, as a worker runs it) once with the
work and once without, the order alternating point by point, and rung 8's model evaluation the
same way. Every pair's outcome (status, checks, findings' words) and every model score must be the
same; the medians and the total ratio are the result.

usage: TRITON_INTERPRET=1 python bench/interpreter_checks.py --json OUT.json [--what checks|lang]
       [--cases CASE:RUNG,...] [--max-points N]"""
import argparse
import dataclasses
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

# the zoo's Triton twins whose suite batches cost most, at their own rung (docs/results/2026-12-07-cpu-make-zoo)
CASES = "lowp_probs_underflow:2,config_writes_zeros:1,chunked_prefill_short:2,gemm_k_tail:1,bias_tile_index:2,input_scratch:3"


# the zoo's kernels that call @triton.jit helpers in their loops, and rung 8's, for --what lang
LANG_CASES = "decode_group16:1,chunked_prefill_short:2,lowp_probs_underflow:2,config_writes_zeros:1"


def _options(on: bool) -> None:
    from triton.runtime import interpreter as ti
    ti.interpreter_builder.options = dataclasses.replace(ti.interpreter_builder.options, sanitize_overflow=on)


def _lang(original, once):
    """A setter: Triton's own _patch_lang (the work on) or kladder's once-patched one (off)."""
    def put(on: bool) -> None:
        from triton.runtime import interpreter as ti
        ti._patch_lang = original if on else once
    return put


def _same(o) -> tuple:
    return (str(o.status), str(o.note.kind) if o.note else None,
            tuple((str(f.check), f.output, f.mismatched, f.total, f.max_abs_err) for f in o.findings))


def points_of(case: str, name: str, rung: int, max_points: int):
    from kladder.climbing.ladder import rung_points
    from kladder.core.sizes import budget_for
    from kladder.gen.load import load_spec
    spec = load_spec(f"kladder.zoo.{case}::{name}")
    points = list(rung_points(spec, rung, budget_for("cpu")))
    step = max(1, len(points) // max_points) if max_points else 1
    return spec, points[::step][:max_points or None]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--what", choices=("checks", "lang"), default="checks")
    ap.add_argument("--cases", default=None, help=f"default: {CASES} (checks), {LANG_CASES} (lang)")
    ap.add_argument("--max-points", type=int, default=24, help="points a case, spread over its rung (0: all)")
    ap.add_argument("--model-rounds", type=int, default=2)
    args = ap.parse_args()
    from kladder.run import interpreter
    from kladder.run.trial import run_point
    from kladder.run.worker import setup_torch
    setup_torch("cpu")
    import triton
    from triton.runtime import interpreter as ti
    interpreter.without_dead_checks()                  # its one call: the bench sets the option itself from here
    if args.what == "lang":
        original = ti._patch_lang
        interpreter.patch_lang_once()
        put, on_key = _lang(original, ti._patch_lang), "with_repatch_s"
    else:
        put, on_key = _options, "with_checks_s"
    cases = args.cases or (LANG_CASES if args.what == "lang" else CASES)
    result = {"device": "cpu (Triton interpreter)", "python": sys.version.split()[0], "triton": triton.__version__,
              "what": args.what, "cases": [], "complete": False}
    for item, name in ((c, n) for c in cases.split(",") for n in ("spec", "fixed")):
        case, rung = item.split(":")
        spec, points = points_of(case, name, int(rung), args.max_points)
        if points:
            run_point(spec, points[0], "cpu")         # unmeasured: the kernel's first parse and the reference's warm-up
        on_s, off_s, differ, failed = [], [], [], 0
        for i, p in enumerate(points):
            times = {}
            outs = {}
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                put(on)
                t = time.perf_counter()
                outs[on] = run_point(spec, p, "cpu").outcome
                times[on] = time.perf_counter() - t
            on_s.append(times[True])
            off_s.append(times[False])
            if _same(outs[True]) != _same(outs[False]):
                differ.append(p.id)
            failed += outs[False].status.name == "FAILED"
        row = {"case": case, "kernel": "buggy" if name == "spec" else "twin", "rung": int(rung), "points": len(points),
               "failed_points": failed,
               on_key: round(sum(on_s), 2), "without_s": round(sum(off_s), 2),
               "ratio_total": round(sum(off_s) / sum(on_s), 3),
               "ratio_median": round(statistics.median(b / a for a, b in zip(on_s, off_s, strict=True)), 3),
               "outcomes_differ": differ}
        result["cases"].append(row)
        print(json.dumps(row), flush=True)
    if args.model_rounds:
        import kladder.model as km
        if args.what == "lang":
            from kladder.zoo import decode_group16 as dg
            slots, which = {"attention_decode": dg.attention_decode_fixed}, "decode_group16"
        else:
            from kladder.zoo import compounding_bias as cb
            slots, which = {"rmsnorm": cb.rmsnorm_fixed}, "compounding_bias"
        on_s, off_s, scores = [], [], set()
        for r in range(args.model_rounds):
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                put(on)
                t = time.perf_counter()
                s = km.evaluate(slots, n=64, dtype="bfloat16", seed=1)
                (on_s if on else off_s).append(time.perf_counter() - t)
                scores.add((s.score, s.nll, s.drift, s.gain))
        row = {"case": f"{which} twin in rung 8's model (64 problems, bfloat16)", "rounds": args.model_rounds,
               on_key: [round(x, 2) for x in on_s], "without_s": [round(x, 2) for x in off_s],
               "ratio_median": round(statistics.median(off_s) / statistics.median(on_s), 3),
               "scores_identical": len(scores) == 1}
        result["model"] = row
        print(json.dumps(row), flush=True)
    on_total = sum(c[on_key] for c in result["cases"])
    off_total = sum(c["without_s"] for c in result["cases"])
    result["total"] = {on_key: round(on_total, 2), "without_s": round(off_total, 2),
                       "ratio": round(off_total / on_total, 3) if on_total else None,
                       "outcomes_differ": sum(len(c["outcomes_differ"]) for c in result["cases"])}
    result["complete"] = True
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1, allow_nan=False)
    print(json.dumps(result["total"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
