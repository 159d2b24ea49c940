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
values, contiguous layouts), only to failures of the same check; then kladder.climbing.shrink's plain
search finishes the dims and says what decides the failure (Hypothesis's shrinker cannot move a
tile-multiple draw onto a size between multiples).

The budget (--budget-s) is the whole run's, search and shrinking, kept within a tenth:
- cheap points first: each draw is capped by a cost level it draws first (level 0: 2 rows and
  about a thousand elements a tensor; each level fourfold the elements and twofold the rows, up
  to the device's budget: on the CPU a point's cost is its rows, the interpreter's programs);
  the search admits level 0 at first and one level more every GROW_EVERY points it drew and ran (a draw of
  a higher level is drawn again, which costs nothing), and runs no point whose cost, scaled by
  its size from those run so far, would end past the budget;
- a failure ends the search and the rest of the budget is spent on it (at least a tenth of the
  budget, so that a failure found at the end is still shrunk): half of it Hypothesis's
  shrinking, the rest kladder.climbing.shrink's; --shrink-s caps the shrinking. Hypothesis's example database lives under .kladder/hypothesis (keyed by
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
GROW_EVERY = 2               # points run at one cost level before the next is admitted
START_ELEMENTS, START_ROWS, MAX_LEVEL = 1 << 10, 2, 12
LATE_SHRINK = 0.1            # a failure found at the budget's end is shrunk for this share of it


class _Found(Exception):
    """A point failed (the check the first failure had): Hypothesis shrinks it."""


class _OutOfTime(BaseException):
    """The budget is spent: not an Exception, so Hypothesis neither shrinks nor keeps it."""


# ---------------------------------------------------------------- strategies from the spec

def largest_fitting(spec, sizes: dict, d: str, lo: int, hi: int, budget) -> int | None:
    """The largest value of dim d in [lo, hi] that fits with `sizes`, or None."""
    from ..core.sizes import fits
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


def cap_at(budget, level: int):
    """The budget of cost level `level`: START_ELEMENTS and START_ROWS at 0, fourfold elements and
    twofold rows a level, `budget` itself at the top (levels(budget))."""
    import dataclasses
    if level >= levels(budget):
        return budget
    return dataclasses.replace(budget, max_elements=min(budget.max_elements, START_ELEMENTS << (2 * level)),
                               max_rows=min(budget.max_rows, START_ROWS << level))


def levels(budget) -> int:
    """The top cost level: the first at which both caps reach the budget's, at most MAX_LEVEL."""
    level = 0
    while level < MAX_LEVEL and (START_ELEMENTS << (2 * level) < budget.max_elements
                                 or START_ROWS << level < budget.max_rows):
        level += 1
    return level


def level_of(spec, point, budget) -> int:
    """The lowest cost level whose cap the point fits."""
    from ..core.sizes import fits
    top = levels(budget)
    return next((k for k in range(top) if fits(spec, point.sizes, cap_at(budget, k))), top)


def point_strategy(spec, budget, rungs, leveled: bool = False):
    """Points drawn within `budget`; `leveled`: within the cap of a cost level drawn first, each
    level as likely (a search that admits only the cheap levels at first finds points there)."""
    from hypothesis import reject
    from hypothesis import strategies as st

    from ..gen.gaps.common import chosen_dtypes

    @st.composite
    def draw_point(draw):
        sizes: dict[str, int] = {}
        names = list(spec.dims)
        within = cap_at(budget, draw(st.integers(0, levels(budget)))) if leveled else budget
        for i, d in enumerate(names):
            dim = spec.dims[d]
            rest = {n: spec.dims[n].min for n in names[i + 1:]}
            top = largest_fitting(spec, {**sizes, **rest}, d, dim.min, dim.max, within)
            if top is None:
                reject()
            sizes[d] = draw(dim_strategy(dim, dim.min, top))
        picked = {n: draw(st.sampled_from(spec.dtype_choices(n))) for n in spec.all_tensors
                  if len(spec.dtype_choices(n)) > 1}
        dtypes = chosen_dtypes(spec, picked)
        config = tuple(draw(st.sampled_from(list(spec.configs))).items()) if spec.configs else ()
        values, layouts = (), ()
        if 2 in rungs:
            kinds = value_choices(spec, dtypes)
            if kinds:
                v = draw(st.none() | st.sampled_from(kinds))
                values = (v,) if v else ()
        if 3 in rungs:
            lays = layout_choices(spec)
            if lays:
                v = draw(st.none() | st.sampled_from(lays))
                layouts = (v,) if v else ()
        return explore_point(spec, sizes, dtypes, config, values, layouts, "drawn by kladder explore (Hypothesis)")
    return draw_point()


def value_choices(spec, dtypes) -> list[tuple[str, str]]:
    """(input, value kind) pairs rung 2 would put at a point with these dtypes."""
    from ..gen.gaps.values import kind_labels
    from ..core.sizes import dtype_of
    return [(n, lab) for n, t in spec.input_args.items()
            for k in t.value_kinds(dtype_of(spec, n, dict(dtypes)), spec.nonfinite)
            if not (k == "identical" and len(t.symbols) < 2 and t.values is None)
            for lab in kind_labels(k)]


def layout_choices(spec) -> list[tuple[str, str]]:
    return [(n, lay) for n, t in spec.input_args.items() for lay in t.layout_list()]


def explore_point(spec, sizes: dict, dtypes, config, values, layouts, why: str):
    from ..core.notation import PointKind
    from ..core.point import Point
    rung = 3 if layouts else 2 if values else 1
    return Point(spec.name, rung, tuple(sizes.items()), dtypes, why, config, kind=PointKind.EXPLORE,
                 values=values, layouts=layouts)


SWEEP_SIZE = 64              # each dim of the sweep's shape, at most (within cost level 0)


def sweep(spec, budget, rungs) -> list:
    """Cheap points first: with rung 2 (3) asked for, each input's every value kind (layout) once,
    at one shape of cost level 0 (each dim the largest up to SWEEP_SIZE that fits with the rest
    at their floor), the first dtype and config. A kind that breaks the kernel at any size (a
    float16 sum that overflows on x: huge) fails here within seconds, whatever Hypothesis draws."""
    from ..gen.gaps.common import chosen_dtypes
    within, sizes = cap_at(budget, 0), {}
    names = list(spec.dims)
    for i, d in enumerate(names):
        dim = spec.dims[d]
        rest = {n: spec.dims[n].min for n in names[i + 1:]}
        top = largest_fitting(spec, {**sizes, **rest}, d, dim.min, min(dim.max, max(dim.min, SWEEP_SIZE)), within)
        if top is None:
            return []
        sizes[d] = dim.snap(top)
    dtypes = chosen_dtypes(spec, {})
    config = tuple(spec.configs[0].items()) if spec.configs else ()
    why = "kladder explore's sweep: each value kind and layout once, at a cheap shape"
    out = [explore_point(spec, sizes, dtypes, config, (v,), (), why) for v in (value_choices(spec, dtypes)
                                                                          if 2 in rungs else [])]
    return out + [explore_point(spec, sizes, dtypes, config, (), (v,), why) for v in (layout_choices(spec)
                                                                                       if 3 in rungs else [])]


# ---------------------------------------------------------------- where earlier failures are kept

def key_of(ref: str, spec) -> str:
    return hashlib.sha256(f"{os.path.abspath(ref) if ref.endswith('.py') else ref}\0{spec.name}".encode()).hexdigest()[:16]


def kept_path(root: str, key: str) -> str:
    return os.path.join(root, "explore", key + ".jsonl")


def kept_points(root: str, key: str) -> list:
    from ..core.point import Point
    try:
        with open(kept_path(root, key)) as f:
            return [Point.from_dict(json.loads(line)["point"]) for line in f if line.strip()]
    except (OSError, ValueError, KeyError):
        return []


def keep(root: str, key: str, point) -> None:
    if point in kept_points(root, key):
        return
    os.makedirs(os.path.dirname(kept_path(root, key)), exist_ok=True)
    from ..report.jsonout import dumps
    with open(kept_path(root, key), "a") as f:
        f.write(dumps({"point": point.to_dict()}) + "\n")


# ---------------------------------------------------------------- the search

class Costs:
    """What the points run so far cost: the cost levels admitted (cheap points first) and a
    point's predicted seconds from its size (on the CPU its output rows, the interpreter's
    programs, and its elements / 256, a row's chunks; on a GPU its elements)."""

    MARGIN = 1.5                 # a prediction's head room: a point that might end past the budget is not run

    def __init__(self, spec, budget):
        self.spec, self.full = spec, budget
        self.runs: list[tuple[float, float]] = []     # (size, wall seconds) of each point run
        self.drawn = 0                                 # points run that the search drew (not replayed or swept)

    def size(self, point) -> float:
        from ..core.sizes import numel_of, output_rows
        elements = max((numel_of(self.spec, n, point.sizes) for n in self.spec.all_tensors), default=1)
        if self.full.device == "cpu":
            return max(1, output_rows(self.spec, point.sizes)) + elements / 256
        return float(max(1, elements))

    def admits(self, point) -> bool:
        """The point is within the cost levels admitted so far: one more every GROW_EVERY points the
        search drew and ran (the sweep and the replays, all cheap, admit nothing dearer)."""
        return level_of(self.spec, point, self.full) <= self.drawn // GROW_EVERY

    def add(self, point, seconds: float, drawn: bool = True) -> None:
        self.runs.append((self.size(point), seconds))
        self.drawn += drawn

    def predicted(self, point) -> float:
        """Its seconds: the cheapest run's (a run's fixed cost) plus the median cost a unit of size
        of the larger half of the runs (where the size shows) times its size, with a margin. The
        first run is left out: its time holds the worker's start."""
        import statistics
        runs = self.runs[1:]
        if not runs:
            return 0.0
        fixed = min(s for _, s in runs)
        large = sorted(runs)[len(runs) // 2:]
        per = statistics.median(max(s - fixed, 0.0) / n for n, s in large)
        return fixed + self.MARGIN * per * self.size(point)

    def cheapest(self) -> float:
        return min((s for _, s in self.runs[1:]), default=0.0)


def explore(ref: str, spec, runner, *, budget, rungs=(1, 2), budget_s: float = 60.0, shrink_s: float | None = None,
            root: str = ".kladder", seed: int | None = None, on_point=None, started: float | None = None) -> dict:
    """Draw, run and judge points, cheap ones first, until one fails or `budget_s` is spent;
    shrink the failure with what is left of the budget (at least LATE_SHRINK of it; at most
    `shrink_s`): half Hypothesis's shrinking, then kladder.climbing.shrink's plain search. `started`: when
    the budget began (time.monotonic(); the command's start, its imports counted), else now."""
    from hypothesis import HealthCheck, Phase, Verbosity, example, given, reject, settings
    from hypothesis import seed as hseed
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.database import DirectoryBasedExampleDatabase

    from ..climbing.shrink import shrink, signature
    t0 = time.monotonic() if started is None else started
    set_hypothesis_home_dir(os.path.join(root, "hypothesis-home"))   # its caches, never a .hypothesis in the cwd
    key = key_of(ref, spec)
    replays = kept_points(root, key)
    swept = [p for p in sweep(spec, budget, set(rungs)) if p not in replays]
    explicit = set(replays) | set(swept)
    ran: dict = {}                                # point -> its signature: a point drawn again is not run again
    tried: list[dict] = []
    costs = Costs(spec, budget)
    state = {"phase": SEARCH, "target": None, "first": None, "best": None, "best_outcome": None, "t_found": None,
             "hypothesis_end": None, "shrink_end": None, "skipped": 0}

    def found(now: float) -> None:
        left = max(t0 + budget_s - now, LATE_SHRINK * budget_s)
        end = now + (left if shrink_s is None else min(left, shrink_s))
        state.update(phase=SHRINK, t_found=now, hypothesis_end=now + (end - now) / 2, shrink_end=end)

    def body(point):
        now = time.monotonic()
        if point in ran:                         # drawn again (Hypothesis repeats itself): the verdict it had
            if ran[point] is not None and ran[point] == state["target"]:
                raise _Found(ran[point])
            return
        if state["phase"] == SEARCH:
            left = t0 + budget_s - now
            if left <= costs.cheapest() or left <= 0:
                raise _OutOfTime()
            if point not in explicit and not costs.admits(point):
                reject()                         # cheap points first: its cost level is not admitted yet
            if costs.predicted(point) > left and point not in explicit:
                state["skipped"] += 1
                reject()                         # too dear for what is left: another draw
        elif now > state["hypothesis_end"]:
            raise _OutOfTime()
        outcome = runner.run(point)
        costs.add(point, time.monotonic() - now, drawn=point not in explicit)
        sig = signature(outcome)
        ran[point] = sig
        entry = {"point": point.to_dict(), "id": point.id, "status": str(outcome.status), "check": sig,
                 "replayed": point in replays, "swept": point in swept, "phase": state["phase"], "repro": outcome.repro,
                 "seconds": round(time.monotonic() - now, 3), "at_s": round(now - t0, 3)}
        tried.append(entry)
        if on_point:
            on_point(entry)
        if sig is not None and state["target"] in (None, sig):
            if state["target"] is None:
                state.update(target=sig, first=entry)
                found(time.monotonic())
            if state["best"] is None or _size_key(point) <= _size_key(state["best"]):
                state["best"], state["best_outcome"] = point, outcome
            raise _Found(sig)

    test = given(point_strategy(spec, budget, set(rungs), leveled=True))(body)
    for p in reversed(replays + swept):          # explicit examples run first: the earliest kept first, then the sweep
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
        stopped = "failed" if state["best"] is not None else "budget"
    except Exception as e:  # noqa: BLE001 - Hypothesis's own errors (Flaky: a failure that did not recur)
        stopped = f"hypothesis: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    result = {"spec": spec.name, "ref": ref, "rungs": list(rungs), "budget_s": budget_s, "shrink_s": shrink_s,
              "stopped": stopped, "points": tried, "replayed": [p.to_dict() for p in replays],
              "swept": len(swept), "failure": state["first"], "found_after_s": None if state["t_found"] is None else
              round(state["t_found"] - t0, 3), "too_dear": state["skipped"], "hypothesis_smallest": None,
              "shrunk": None, "seconds": None}
    if state["best"] is not None:
        best = state["best"]
        if not (state["first"]["replayed"] or state["first"]["swept"]):   # Hypothesis shrinks no explicit example
            result["hypothesis_smallest"] = {"point": best.to_dict(), "id": best.id}
        facts = shrink(best, state["best_outcome"], runner.run, spec, max(0.0, state["shrink_end"] - time.monotonic()))
        result["shrunk"] = facts
        smallest = best if not facts.get("smallest") else _point(facts["smallest"])
        facts["repro"] = _repro(ref, runner.device, smallest)
        keep(root, key, smallest)
    result["seconds"] = round(time.monotonic() - t0, 3)
    return result


def _point(d: dict):
    from ..core.point import Point
    return Point.from_dict(d)


def _repro(ref: str, device: str, point) -> str:
    from ..climbing.ladder import repro_command
    return repro_command(ref, device, point)


def _size_key(point) -> tuple:
    """Smaller is simpler: fewer elements, then plain values and layouts."""
    return (sum(point.sizes.values()), len(point.values) + len(point.layouts), point.sizes and tuple(point.sizes.values()))
