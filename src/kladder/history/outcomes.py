"""The outcome store: every outcome a climb runs, kept beside the history (the same SQLite file,
table `outcomes`, store.py's migration 3 -> 4) under the key of everything that decides it
(history/key.py). A later climb computes each point's key again and reuses the outcome kept
under it instead of running the point, when that outcome can be trusted again:

- a PASSED outcome, or a SKIPPED one whose reason the key decides (a mode that needs CUDA on the
  CPU, a GPU point, a kernel that is no torch op, ...: STABLE_SKIPS), is reused;
- every other outcome (failed, flaky, broken, not judged, out of memory, a skip for a passing
  condition such as the device's free memory) is kept too, so that no earlier pass under its key
  is reused after it, and its point runs again in every climb;
- `--fresh` reuses nothing (this climb's outcomes are kept all the same);
- rung 5's clean repetition and stream points (REPEATS_CLEAN, STREAM_CLEAN) keep their evidence
  across climbs: each climb that runs one under an unchanged key adds its calls to the calls kept,
  and its note says the bound they prove together (facts.AccumulatedFacts). By default such a
  point is reused like any passed point (a commit that changed nothing costs nothing);
  `--accumulate` runs them again to add calls. A failed run under the key starts the count over.

Reused outcomes are marked (Outcome.reused: the climb that ran them), in the report and its JSON.
The store is bounded: after each climb the least recently used outcomes (kept or reused) beyond
`size` go (DEFAULT_SIZE). Writes go through the history's transactions (WAL, BEGIN IMMEDIATE, busy
retried): climbs side by side share one file safely; a key is read and written back in one
transaction, so two climbs adding rung-5 calls to one key never lose either's.

The store never decides a verdict: a file that cannot be used is one line on stderr and the climb
runs every point."""
from __future__ import annotations

import dataclasses
import datetime
import json
import sys
import time
from typing import Callable, Iterable, Iterator

from ..core.facts import AccumulatedFacts, ReusedFacts, ReuseFacts
from ..core.outcome import NoteKind, Outcome, Status
from ..core.point import Point
from .key import PART_WORDS, ClimbKey, climb_key
from .store import STORE_SIZE, History, HistoryError

DEFAULT_SIZE = STORE_SIZE    # outcomes kept (a passed point's is about 1-2 KB: some 150 MB at most); --store-size N
STABLE_SKIPS = (NoteKind.GPU_POINT, NoteKind.MODE_NEEDS_CUDA, NoteKind.NO_OUT_ARGS, NoteKind.NOT_TORCH_OP,
                NoteKind.NOT_COMPILED, NoteKind.COLLECTIVE_NEEDS_CUDA, NoteKind.NOT_ENOUGH_GPUS,
                NoteKind.GRAPHS_NOT_CLAIMED, NoteKind.INTERPRETER_DEFECT, NoteKind.FLAG_NOT_VISIBLE)
ACCUMULATING = (NoteKind.REPEATS_CLEAN, NoteKind.STREAM_CLEAN)
CHUNK = 400                  # keys a SELECT asks for at once (SQLite's variable limit is 999 on old builds)
CLIMB_KEYS_KEPT = 5000       # climbs whose key parts are kept (to say which part changed since the last)


def reusable(o: Outcome) -> bool:
    """A later climb with this key may take the outcome as its own."""
    if o.status == Status.PASSED:
        return True
    return o.status == Status.SKIPPED and o.note is not None and o.note.kind in STABLE_SKIPS


def calls_of(o: Outcome) -> int | None:
    """The calls a clean rung-5 point proved clean (None for any other outcome)."""
    if o.status != Status.PASSED or o.note is None or o.note.kind not in ACCUMULATING:
        return None
    x = o.note.facts
    return int(x.compared if o.note.kind == NoteKind.REPEATS_CLEAN else x.judged)


def _now() -> str:
    return datetime.datetime.now().isoformat(timespec="seconds")


class OutcomeStore:
    """The store of one history file, opened for a command (`kladder climb`, one spec or many)."""

    def __init__(self, path: str, size: int = DEFAULT_SIZE, fresh: bool = False, accumulate: bool = False):
        self.path, self.size, self.fresh, self.accumulate = path, max(0, int(size)), fresh, accumulate
        self.h: History | None = None
        self.device_fingerprint: dict | None = None      # a CUDA worker's, shared by every spec climbed
        try:
            self.h = History(path)
        except HistoryError as e:
            self._lost(e)

    def _lost(self, e: Exception) -> None:
        print(f"kladder: the outcome store in {self.path!r} is not used ({e}); every point runs "
              "(give --history PATH, or --fresh)", file=sys.stderr)
        if self.h is not None:
            self.h.close()
        self.h = None

    def safely(self, fn: Callable, *a, default=None):
        """fn(*a), or `default` with the store dropped for the rest of the command when it fails."""
        if self.h is None:
            return default
        try:
            return fn(*a)
        except Exception as e:  # noqa: BLE001 - the store must never end a climb
            self._lost(e)
            return default

    def climbing(self, ref: str, spec, device: str, runner, run_id: str, timeout_s: float | None) -> "ClimbStore":
        return ClimbStore(self, ref, spec, device, runner, run_id, timeout_s)

    def close(self) -> None:
        if self.h is not None:
            self.safely(self._prune)
            self.h.close()
            self.h = None

    def _prune(self) -> None:
        db = self.h.db
        n = db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
        k = db.execute("SELECT COUNT(*) FROM climb_keys").fetchone()[0]
        if n <= self.size and k <= CLIMB_KEYS_KEPT:
            return
        with self.h.transaction() as db:
            over = db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] - self.size
            if over > 0:
                db.execute("DELETE FROM outcomes WHERE key IN (SELECT key FROM outcomes ORDER BY used ASC LIMIT ?)",
                           (over,))
            db.execute("DELETE FROM climb_keys WHERE run_id NOT IN (SELECT run_id FROM climb_keys ORDER BY kept DESC "
                       "LIMIT ?)", (CLIMB_KEYS_KEPT,))

    def count(self) -> int:
        return 0 if self.h is None else self.h.db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]


def smi_fingerprint(env=None, smi=None) -> dict | None:
    """The CUDA device a climb's workers will run on, as the key needs it (name, capability,
    count, the driver), from `nvidia-smi` and CUDA_VISIBLE_DEVICES in this process: a climb whose
    points are all in the store then waits for no worker (on an H100 a worker's hello took 4.8 s:
    importing torch and the spec, starting CUDA). None where that cannot be told for sure (no
    nvidia-smi, a MIG or unparsed CUDA_VISIBLE_DEVICES, ROCm): the worker's hello then decides.
    The key is the same function of these facts on every climb, so a key made here never meets
    one made from a worker's hello (they differ in the driver's CUDA version): nothing is reused
    between the two, never wrongly."""
    import os
    import shutil
    import subprocess

    from ..core.fingerprint import driver_version, fingerprint
    env = os.environ if env is None else env
    smi = smi or shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=index,uuid,name,compute_cap,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]
    if not rows or any(len(r) != 5 for r in rows):
        return None
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        chosen = []
        for item in (v.strip() for v in visible.split(",")):
            if not item:
                break                                     # CUDA stops at the first empty or invalid entry
            match = [r for r in rows if r[0] == item or (item.startswith("GPU-") and r[1].startswith(item))]
            if len(match) != 1:
                return None                               # MIG-..., a bad index: the worker's hello decides
            chosen.append(match[0])
        rows = chosen
    if not rows:
        return None
    cap = rows[0][3]
    if not cap.replace(".", "").isdigit():
        return None
    fp = fingerprint(None, None)
    fp["device"] = {"kind": "cuda", "name": rows[0][2], "capability": cap, "arch": "sm_" + cap.replace(".", ""),
                    "count": len(rows), "from": "nvidia-smi"}
    fp["driver"] = driver_version(None, None) or rows[0][4]
    return fp


class ClimbStore:
    """One climb's use of the store: its key (computed at its first rung; on CUDA from
    nvidia-smi, else once a worker has said which device it runs on), each rung's points reused
    or run (`outcomes`), and what it took and ran (`facts`)."""

    def __init__(self, store: OutcomeStore, ref: str, spec, device: str, runner, run_id: str, timeout_s):
        self.store, self.ref, self.spec, self.device = store, ref, spec, device
        self.runner, self.run_id, self.timeout_s = runner, run_id, timeout_s
        self.key: ClimbKey | None = None
        self.reused = self.ran = 0
        self.from_runs: dict[str, int | None] = {}        # run id -> its history number (#N)
        self.changed: list[str] = []
        self.since: int | None = None

    # ------------------------------------------------------------------ the key
    def _fingerprint(self) -> dict:
        if self.device != "cuda":
            from ..core.fingerprint import fingerprint
            return fingerprint(None, self.device)
        if self.store.device_fingerprint is None:
            fp = smi_fingerprint()                            # the driver's word, without waiting for a worker
            if fp is not None:
                self.store.device_fingerprint = fp
                return fp
            self.runner.pool.free_bytes()                     # a worker's hello: the device it runs on
            fp = self.runner.fingerprint
            if isinstance(fp.get("device"), dict) and fp["device"].get("name"):
                self.store.device_fingerprint = fp
        return self.store.device_fingerprint or {}

    def _ensure_key(self) -> ClimbKey:
        if self.key is None:
            fp = self._fingerprint()          # what starting a worker raises (a device others hold) is the climb's
            try:
                self.key = climb_key(self.spec, self.device, fp, self.timeout_s)
            except Exception as e:  # noqa: BLE001 - kladder's own gap in the key: nothing is reused, said
                self.key = ClimbKey(why_not=f"the key could not be computed ({type(e).__name__}: {e})")
            if not self.key.why_not:
                self.store.safely(self._compare_and_keep_parts)
        return self.key

    def _compare_and_keep_parts(self) -> None:
        """Which parts of the key changed since the spec's last climb kept, and this climb's kept."""
        db = self.store.h.db
        row = db.execute("SELECT run_id, parts FROM climb_keys WHERE spec = ? AND ref = ? ORDER BY kept DESC, rowid DESC "
                         "LIMIT 1", (self.spec.name, self.ref)).fetchone()
        if row is not None:
            before = json.loads(row["parts"])
            self.changed = [p for p in PART_WORDS if before.get(p) != self.key.parts.get(p)]
            self.since = self._climb_numbers([row["run_id"]]).get(row["run_id"])
        with self.store.h.transaction() as db:
            db.execute("INSERT OR REPLACE INTO climb_keys (run_id, spec, ref, parts, kept) VALUES (?,?,?,?,?)",
                       (self.run_id, self.spec.name, self.ref, json.dumps(self.key.parts), _now()))

    def _climb_numbers(self, run_ids: Iterable[str]) -> dict[str, int | None]:
        ids = sorted(set(run_ids))
        found: dict[str, int | None] = dict.fromkeys(ids)
        for i in range(0, len(ids), CHUNK):
            part = ids[i:i + CHUNK]
            q = f"SELECT run_id, id FROM climbs WHERE run_id IN ({','.join('?' * len(part))})"
            found |= {r["run_id"]: r["id"] for r in self.store.h.db.execute(q, part).fetchall()}
        return found

    # ------------------------------------------------------------------ a rung
    def outcomes(self, points: list[Point], run: Callable[[list[Point]], Iterator[Outcome]],
                 started: Callable[[Point], None] | None, repro: Callable[[Point], str]) -> Iterator[Outcome]:
        """The rung's outcomes in the points' order: those reused from the store in place, the
        rest run (`run`: the runner's run_all on them) and kept as they come. (`split` and
        `kept` are the same two steps for a caller that schedules the points to run itself.)"""
        taken, keys = self.split(points, repro)
        fresh = run([p for i, p in enumerate(points) if i not in taken])
        for i, p in enumerate(points):
            if i in taken:
                if started:
                    started(p)
                yield taken[i]
                continue
            yield self.kept(keys[i], next(fresh))

    def split(self, points: list[Point], repro: Callable[[Point], str]) -> tuple[dict[int, Outcome], list[str | None]]:
        """The outcomes the store gives, by the points' positions (marked reused, their repro
        made for this climb), and every point's key (None: not keyed; it runs and is not kept)."""
        keys, rows = self._lookup(points)
        taken: dict[int, Outcome] = {}
        if not self.store.fresh:
            for i, k in enumerate(keys):
                row = rows.get(k) if k else None
                if self._usable(row):
                    try:
                        taken[i] = self._reused(row, points[i], repro)
                    except (ValueError, TypeError, KeyError):   # an outcome this kladder cannot read: run it
                        continue
        if taken:
            numbers = self.store.safely(self._climb_numbers, [o.reused.run_id for o in taken.values()], default={}) or {}
            for o in taken.values():
                o.reused = dataclasses.replace(o.reused, climb=numbers.get(o.reused.run_id))
                self.from_runs[o.reused.run_id] = o.reused.climb
            self.store.safely(self._touch, [keys[i] for i in taken])
        self.reused += len(taken)
        return taken, keys

    def given(self, points: list[Point]) -> set[Point]:
        """The points whose outcomes the store would give now (nothing counted, kept or touched):
        the climb starts no early process for them."""
        if self.store.fresh or self.store.h is None:
            return set()
        keys, rows = self._lookup(points)
        return {p for p, k in zip(points, keys, strict=True) if k and self._usable(rows.get(k))}

    def _lookup(self, points: list[Point]) -> tuple[list[str | None], dict[str, dict]]:
        keys = [self._key_of(p) for p in points] if self.store.h is not None else [None] * len(points)
        return keys, self.store.safely(self._rows, [k for k in keys if k], default={}) or {}

    def _usable(self, row: dict | None) -> bool:
        """A stored outcome this climb may take: reusable (passed, its key whole), and not rung 5's
        calls while the climb adds to them (--accumulate)."""
        return row is not None and bool(row["reusable"]) and not (self.store.accumulate and row["calls"] is not None)

    def kept(self, key: str | None, o: Outcome) -> Outcome:
        """A point's outcome as it ran, kept under its key (rung 5's note then saying the calls kept)."""
        self.ran += 1
        if key:
            self.store.safely(self._keep, key, o)
        return o

    def _key_of(self, p: Point) -> str | None:
        key = self._ensure_key()
        try:
            return key.point(p)
        except Exception:  # noqa: BLE001 - a point whose own values cannot be keyed runs, and is not kept
            return None

    def _rows(self, keys: list[str]) -> dict[str, dict]:
        out = {}
        for i in range(0, len(keys), CHUNK):
            part = keys[i:i + CHUNK]
            q = (f"SELECT key, status, reusable, outcome, run_id, kept, calls, climbs, since FROM outcomes "
                 f"WHERE key IN ({','.join('?' * len(part))})")
            out |= {r["key"]: dict(r) for r in self.store.h.db.execute(q, part).fetchall()}
        return out

    def _reused(self, row: dict, point: Point, repro: Callable[[Point], str]) -> Outcome:
        o = Outcome.from_dict(json.loads(row["outcome"]))
        o.point = point                      # the same point (its key says so), with this climb's words for it
        o.reused = ReusedFacts(run_id=row["run_id"] or "", climb=None, kept=row["kept"])
        o.repro = repro(o.point)
        return o

    def _touch(self, keys: list[str]) -> None:
        now = time.time()
        with self.store.h.transaction() as db:
            db.executemany("UPDATE outcomes SET used = ? WHERE key = ?", [(now, k) for k in keys])

    def _keep(self, key: str, o: Outcome) -> None:
        """The outcome under its key; a clean rung-5 point's calls added to those kept under it
        (read and written in one transaction), its note then saying the bound they prove."""
        calls = calls_of(o)
        with self.store.h.transaction() as db:
            climbs, since = 1, _now()
            if calls is not None:
                prior = db.execute("SELECT calls, climbs, since FROM outcomes WHERE key = ?", (key,)).fetchone()
                if prior is not None and prior["calls"] is not None:
                    calls, climbs, since = calls + prior["calls"], prior["climbs"] + 1, prior["since"]
                    _accumulated(o, climbs, calls, since)
            db.execute("INSERT OR REPLACE INTO outcomes (key, spec, ref, point_id, status, reusable, outcome, run_id, kept, "
                       "used, calls, climbs, since) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       (key, self.spec.name, self.ref, o.point.id, str(o.status), int(reusable(o)),
                        json.dumps(o.to_dict(), default=str), self.run_id, _now(), time.time(),
                        calls, climbs if calls is not None else None, since if calls is not None else None))

    # ------------------------------------------------------------------ the climb's facts
    def facts(self) -> ReuseFacts:
        key = self.key
        runs = sorted(self.from_runs, key=lambda r: (self.from_runs[r] is None, self.from_runs[r] or 0, r))
        return ReuseFacts(points=self.reused + self.ran, reused=self.reused, ran=self.ran,
                          climbs=sorted({n for n in self.from_runs.values() if n is not None}), run_ids=runs,
                          fresh=self.store.fresh, accumulate=self.store.accumulate,
                          why_not=None if key is None else key.why_not,
                          changed=list(self.changed), since=self.since)


def _accumulated(o: Outcome, climbs: int, calls: int, since: str) -> None:
    from ..core.stats import CONFIDENCE, upper_bound
    acc = AccumulatedFacts(climbs=climbs, calls=calls, bound=upper_bound(0, calls), conf=CONFIDENCE, since=since)
    o.note = dataclasses.replace(o.note, facts=dataclasses.replace(o.note.facts, accumulated=acc))
