"""`kladder explore SPEC [--budget-s S] [--rungs R]`: points between the ladder's edges.

The fixed ladder puts points where a spec says behaviour changes (tile edges, widths, 2^31);
a bug wrong in a band between them (N in [1000, 1100]) is missed by every climb. explore
draws points with Hypothesis strategies built from the spec:
- each dim within its range, capped so that the point fits the device's budget (the dims
  drawn in order, each at most what fits with the rest at their floor), from one of: any size
  in the range (two branches of four, so it is drawn most, and the branch Hypothesis shrinks
  towards), a multiple of a tile and its neighbours, a declared width and its neighbours, the
  range's ends;
- each dtype choice, each accepted config; with rung 2 in --rungs one input's value kind at
  times, with rung 3 one input's layout.
Each point runs and is judged as a climb judges (ladder.Runner: a worker, a replay when it
fails). The first failure is shrunk by Hypothesis (towards any-size draws, small sizes, normal
values, contiguous layouts), only to failures of the same check; then kladder.shrink's plain
search finishes the dims (Hypothesis's shrinker cannot move a tile-multiple draw onto a size
between multiples). Hypothesis's example database lives under .kladder/hypothesis (keyed by
the spec's reference and name), and each smallest failing point is kept in
.kladder/explore/KEY.jsonl: the next run replays those points first (as explicit examples),
then the database's, then draws new ones. With --seed, Hypothesis draws the same points every
run and (its rule) neither reads nor writes its database; the kept points still replay. It complements the fixed ladder, never replaces it."""
from __future__ import annotations

import hashlib
import json
import os
import time

SEARCH, SHRINK = "search", "shrink"


class ExploreProblem(ValueError):
    """A bad request: exit 2."""


class _Found(Exception):
    """A point failed (the check the first failure had): Hypothesis shrinks it."""


class _OutOfTime(BaseException):
    """The budget is spent: not an Exception, so Hypothesis neither shrinks nor keeps it."""


# ---------------------------------------------------------------- strategies from the spec

def largest_fitting(spec, sizes: dict, d: str, lo: int, hi: int, budget) -> int | None:
    """The largest value of dim d in [lo, hi] that fits with `sizes`, or None."""
    from .sizes import fits
    if not fits(spec, {**sizes, d: lo}, budget):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(spec, {**sizes, d: mid}, budget) else (lo, mid - 1)
    return lo


def dim_strategy(dim, lo: int, hi: int):
    from hypothesis import strategies as st

    def clamp(v: int) -> int:
        return min(hi, max(lo, v))
    if dim.sizes:                                   # Dim(sizes=[...]): only those
        return st.sampled_from([v for v in dim.sizes if lo <= v <= hi] or [dim.snap(hi)])
    anywhere = st.integers(lo, hi)
    branches = [anywhere, anywhere]
    if dim.tiles:
        branches.append(st.sampled_from(dim.tiles).flatmap(
            lambda t: st.tuples(st.integers(1, max(1, hi // t)), st.sampled_from((-1, 0, 1))).map(
                lambda kd: clamp(kd[0] * t + kd[1]))))
    widths = sorted({clamp(w + e) for w in dim.widths for e in (-1, 0, 1)})
    if widths:
        branches.append(st.sampled_from(widths))
    branches.append(st.sampled_from(sorted({lo, clamp(lo + 1), clamp(hi - 1), hi})))
    return st.one_of(*branches)


def point_strategy(spec, budget, rungs):
    from hypothesis import reject
    from hypothesis import strategies as st

    from .gaps.common import chosen_dtypes
    from .gaps.values import kind_labels
    from .notation import PointKind
    from .point import Point
    from .sizes import dtype_of

    @st.composite
    def draw_point(draw):
        sizes: dict[str, int] = {}
        names = list(spec.dims)
        for i, d in enumerate(names):
            dim = spec.dims[d]
            rest = {n: spec.dims[n].min for n in names[i + 1:]}
            cap = largest_fitting(spec, {**sizes, **rest}, d, dim.min, dim.max, budget)
            if cap is None:
                reject()
            sizes[d] = draw(dim_strategy(dim, dim.min, cap))
        picked = {n: draw(st.sampled_from(spec.dtype_choices(n))) for n in spec.all_tensors
                  if len(spec.dtype_choices(n)) > 1}
        dtypes = chosen_dtypes(spec, picked)
        config = tuple(draw(st.sampled_from(list(spec.configs))).items()) if spec.configs else ()
        values, layouts = (), ()
        if 2 in rungs:
            kinds = [(n, lab) for n, t in spec.input_args.items()
                     for k in t.value_kinds(dtype_of(spec, n, dict(dtypes)), spec.nonfinite)
                     if not (k == "identical" and len(t.symbols) < 2 and t.values is None)
                     for lab in kind_labels(k)]
            if kinds:
                v = draw(st.none() | st.sampled_from(kinds))
                values = (v,) if v else ()
        if 3 in rungs:
            lays = [(n, lay) for n, t in spec.input_args.items() for lay in t.layout_list()]
            if lays:
                v = draw(st.none() | st.sampled_from(lays))
                layouts = (v,) if v else ()
        rung = 3 if layouts else 2 if values else 1
        return Point(spec.name, rung, tuple(sizes.items()), dtypes, "drawn by kladder explore (Hypothesis)",
                     config, kind=PointKind.EXPLORE, values=values, layouts=layouts)
    return draw_point()


# ---------------------------------------------------------------- where earlier failures are kept

def key_of(ref: str, spec) -> str:
    return hashlib.sha256(f"{os.path.abspath(ref) if ref.endswith('.py') else ref}\0{spec.name}".encode()).hexdigest()[:16]


def kept_path(root: str, key: str) -> str:
    return os.path.join(root, "explore", key + ".jsonl")


def kept_points(root: str, key: str) -> list:
    from .point import Point
    try:
        with open(kept_path(root, key)) as f:
            return [Point.from_dict(json.loads(line)["point"]) for line in f if line.strip()]
    except (OSError, ValueError, KeyError):
        return []


def keep(root: str, key: str, point) -> None:
    if point in kept_points(root, key):
        return
    os.makedirs(os.path.dirname(kept_path(root, key)), exist_ok=True)
    from .report.jsonout import dumps
    with open(kept_path(root, key), "a") as f:
        f.write(dumps({"point": point.to_dict()}) + "\n")


# ---------------------------------------------------------------- the search

def explore(ref: str, spec, runner, *, budget, rungs=(1,), budget_s: float = 60.0, shrink_s: float = 60.0,
            root: str = ".kladder", seed: int | None = None, on_point=None) -> dict:
    """Draw, run and judge points until one fails or `budget_s` is spent; shrink the failure
    (Hypothesis for up to `shrink_s`, then the plain search for up to `shrink_s` more)."""
    from hypothesis import HealthCheck, Phase, Verbosity, example, given, settings
    from hypothesis import seed as hseed
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.database import DirectoryBasedExampleDatabase

    from .shrink import shrink, signature
    t0 = time.monotonic()
    set_hypothesis_home_dir(os.path.join(root, "hypothesis-home"))   # its caches, never a .hypothesis in the cwd
    key = key_of(ref, spec)
    replays = kept_points(root, key)
    tried: list[dict] = []
    state = {"phase": SEARCH, "target": None, "first": None, "best": None, "best_outcome": None, "t_found": None}

    def body(point):
        now = time.monotonic()
        if state["phase"] == SEARCH and now - t0 > budget_s:
            raise _OutOfTime()
        if state["phase"] == SHRINK and now - state["t_found"] > shrink_s:
            raise _OutOfTime()
        outcome = runner.run(point)
        sig = signature(outcome)
        entry = {"point": point.to_dict(), "id": point.id, "status": str(outcome.status), "check": sig,
                 "replayed": point in replays, "phase": state["phase"], "repro": outcome.repro}
        tried.append(entry)
        if on_point:
            on_point(entry)
        if sig is not None and state["target"] in (None, sig):
            if state["target"] is None:
                state.update(target=sig, first=entry, phase=SHRINK, t_found=time.monotonic())
            if state["best"] is None or _size_key(point) <= _size_key(state["best"]):
                state["best"], state["best_outcome"] = point, outcome
            raise _Found(sig)

    test = given(point_strategy(spec, budget, set(rungs)))(body)
    for p in reversed(replays):                  # explicit examples run first, the earliest kept first
        test = example(p)(test)
    test = settings(database=DirectoryBasedExampleDatabase(os.path.join(root, "hypothesis")), max_examples=10 ** 6,
                    deadline=None, suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    verbosity=Verbosity.quiet, print_blob=False,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink))(test)
    if seed is not None:
        test = hseed(seed)(test)                 # a fixed seed: Hypothesis then neither reads nor writes its database
    test._hypothesis_internal_database_key = key.encode()
    stopped = "exhausted"
    try:
        test()
    except _Found:
        stopped = "failed"
    except _OutOfTime:
        stopped = "budget"
    except Exception as e:  # noqa: BLE001 - Hypothesis's own errors (Flaky: a failure that did not recur)
        stopped = f"hypothesis: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    result = {"spec": spec.name, "ref": ref, "rungs": list(rungs), "budget_s": budget_s, "stopped": stopped,
              "points": tried, "replayed": [p.to_dict() for p in replays], "failure": state["first"],
              "hypothesis_smallest": None, "shrunk": None, "seconds": None}
    if state["best"] is not None:
        best = state["best"]
        result["hypothesis_smallest"] = {"point": best.to_dict(), "id": best.id}
        facts = shrink(best, state["best_outcome"], runner.run, spec, shrink_s)
        result["shrunk"] = facts
        smallest = best if not facts.get("smallest") else _point(facts["smallest"])
        facts["repro"] = _repro(ref, runner.device, smallest)
        keep(root, key, smallest)
    result["seconds"] = round(time.monotonic() - t0, 3)
    return result


def _point(d: dict):
    from .point import Point
    return Point.from_dict(d)


def _repro(ref: str, device: str, point) -> str:
    from .ladder import repro_command
    return repro_command(ref, device, point)


def _size_key(point) -> tuple:
    """Smaller is simpler: fewer elements, then plain values and layouts."""
    return (sum(point.sizes.values()), len(point.values) + len(point.layouts), point.sizes and tuple(point.sizes.values()))
