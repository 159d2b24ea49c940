"""The history file: `.kladder/history.sqlite` in the working folder (or --history PATH, or the
KLADDER_HISTORY variable; the test suite points it at a temporary folder).

A climb is written as it goes: its row at the start (no end, no verdict), each point in a
transaction of its own as it arrives, and the end and verdict last. A climb killed at any
moment (SIGKILL included) leaves the climbs before it intact and itself as an unfinished row
with the points it had. Many processes may write one file at once (xdist workers, lanes,
parallel climbs): WAL journal (readers never block the writer), every write in BEGIN
IMMEDIATE (the write lock taken up front, so two writers never deadlock upgrading), and
SQLITE_BUSY retried with a growing pause up to BUSY_S seconds.

The schema is versioned by PRAGMA user_version: MIGRATIONS[i] takes version i to i + 1, each
in one transaction, so an older file is brought up to date when it is opened and a newer one
(from a later kladder) is refused rather than misread."""
from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import time

DEFAULT = os.path.join(".kladder", "history.sqlite")
STORE_SIZE = 100_000        # outcomes the outcome store keeps by default (history/outcomes.py; --store-size N)
BUSY_S = 60.0

MIGRATIONS = (
    # 0 -> 1: climbs and their points
    """
    CREATE TABLE climbs (
        id INTEGER PRIMARY KEY,
        run_id TEXT UNIQUE,
        kind TEXT NOT NULL,                  -- climb | repro
        spec TEXT NOT NULL,
        ref TEXT NOT NULL,
        device TEXT,
        kladder_version TEXT,
        fingerprint TEXT,                    -- JSON
        git_commit TEXT,
        started TEXT NOT NULL,
        ended TEXT,                          -- NULL: the climb never finished (killed, or still running)
        verdict TEXT,
        exit_code INTEGER
    );
    CREATE INDEX climbs_spec ON climbs(spec, id);
    CREATE TABLE points (
        climb_id INTEGER NOT NULL REFERENCES climbs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        point_id TEXT NOT NULL,
        rung INTEGER NOT NULL,
        status TEXT NOT NULL,
        failure TEXT,
        seconds REAL,
        stages TEXT,                         -- JSON {stage: seconds}
        hashes TEXT,                         -- JSON {output: sha256}
        PRIMARY KEY (climb_id, seq)
    );
    """,
    # 1 -> 2: what the diff and golden hashes need beyond version 1
    """
    ALTER TABLE climbs ADD COLUMN device_name TEXT;
    ALTER TABLE climbs ADD COLUMN toolchain TEXT;      -- JSON: the versions a kernel's bits follow
    ALTER TABLE points ADD COLUMN nondeterministic INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE points ADD COLUMN point TEXT;          -- JSON: the point itself
    CREATE TABLE rungs (
        climb_id INTEGER NOT NULL REFERENCES climbs(id) ON DELETE CASCADE,
        rung INTEGER NOT NULL,
        verdict TEXT,
        seconds REAL,
        PRIMARY KEY (climb_id, rung)
    );
    CREATE TABLE golden (
        spec TEXT NOT NULL,
        target TEXT NOT NULL,                -- the device and toolchain the hashes hold for (JSON)
        point_id TEXT NOT NULL,
        hashes TEXT NOT NULL,
        climb_id INTEGER,
        recorded TEXT NOT NULL,
        toolchain TEXT,
        PRIMARY KEY (spec, target, point_id)
    );
    """,
    # 2 -> 3: why a climb failed where no point did (--golden=strict)
    """
    ALTER TABLE climbs ADD COLUMN golden TEXT;         -- JSON: the climb's --golden result (facts.GoldenFacts), or null
    """,
    # 3 -> 4: what else ran beside each point (the diff compares timings only at like load), and a
    # climb's --shard (a shard's points are not the whole climb's: shard.py's costs leave them out)
    """
    ALTER TABLE points ADD COLUMN load TEXT;           -- JSON: outcome.Load's facts of the point's run, or null
    ALTER TABLE climbs ADD COLUMN shard TEXT;          -- "I/N" for a climb run with --shard, else null
    """,
    # 4 -> 5: the outcome store (history/outcomes.py): each outcome under the key of all that decides it
    """
    CREATE TABLE outcomes (
        key TEXT PRIMARY KEY,                -- history/key.py: the point, the spec, the code, the toolchain, ...
        spec TEXT NOT NULL,
        ref TEXT NOT NULL,
        point_id TEXT NOT NULL,
        status TEXT NOT NULL,
        reusable INTEGER NOT NULL,           -- 1: a later climb with this key may reuse it
        outcome TEXT NOT NULL,               -- JSON: outcome.Outcome.to_dict (lossless)
        run_id TEXT,                         -- the climb that ran it
        kept TEXT NOT NULL,                  -- when it ran (local time, ISO 8601)
        used REAL NOT NULL,                  -- last kept or reused (seconds since the epoch): the least recent go first
        calls INTEGER,                       -- rung 5: clean calls kept under this key, over `climbs` climbs
        climbs INTEGER,
        since TEXT                           -- rung 5: when the first of them ran
    );
    CREATE INDEX outcomes_used ON outcomes(used);
    CREATE INDEX outcomes_spec ON outcomes(spec, ref);
    CREATE TABLE climb_keys (
        run_id TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        ref TEXT NOT NULL,
        parts TEXT NOT NULL,                 -- JSON: {part: digest} (history/key.py PART_WORDS)
        kept TEXT NOT NULL
    );
    CREATE INDEX climb_keys_spec ON climb_keys(spec, ref, kept);
    ALTER TABLE points ADD COLUMN reused_from TEXT;    -- the run id of the climb whose outcome this point reused
    """,
)
VERSION = len(MIGRATIONS)


class HistoryError(Exception):
    """The history file cannot be used (not SQLite, from a newer kladder, cannot be written)."""


def default_path() -> str:
    return os.environ.get("KLADDER_HISTORY") or DEFAULT


def _retry(fn):
    """fn() again while SQLite says busy or locked, a growing random pause, up to BUSY_S."""
    t0, pause = time.monotonic(), 0.005
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e) or time.monotonic() - t0 > BUSY_S:
                raise
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, 0.5)


class Damaged(HistoryError):
    """The file is SQLite but a page or a row of it is not what kladder wrote (a disk error, an
    edit by hand): reading it says which, never a traceback."""


def _reading(fn):
    """A read of the history: a damaged page (sqlite3.DatabaseError: 'database disk image is
    malformed') is a Damaged error naming the file."""
    def read(self, *a, **kw):
        try:
            return fn(self, *a, **kw)
        except sqlite3.DatabaseError as e:
            raise Damaged(f"{self.path!r} is damaged ({e})") from None
    read.__name__, read.__doc__ = fn.__name__, fn.__doc__
    return read


class History:
    """One history file. Rows whose JSON is not what kladder wrote are left out of what the
    reads return and named in `damaged` (\"climb #3's fingerprint is not JSON\"): the commands refuse
    a history with any (history/commands.py), a climb's --golden warns and goes on."""

    def __init__(self, path: str):
        self.path = path
        self.damaged: list[str] = []
        folder = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(folder, exist_ok=True)
            # isolation_level None: no implicit transactions; each write says BEGIN IMMEDIATE itself
            self.db = sqlite3.connect(path, timeout=BUSY_S, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            _retry(lambda: self.db.execute("PRAGMA journal_mode=WAL"))
            self.db.execute("PRAGMA synchronous=NORMAL")      # WAL + NORMAL: a killed process loses nothing committed
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as e:
            raise HistoryError(f"{path!r}: {e}") from None
        except OSError as e:
            raise HistoryError(f"{path!r}: {e.strerror or e}") from None

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self):
        """One write transaction (BEGIN IMMEDIATE, busy retried): the outcome store's writes."""
        with self._write() as db:
            yield db

    @contextlib.contextmanager
    def _write(self):
        _retry(lambda: self.db.execute("BEGIN IMMEDIATE"))
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        _retry(lambda: self.db.execute("COMMIT"))

    def _migrate(self) -> None:
        have = self.db.execute("PRAGMA user_version").fetchone()[0]
        if have > VERSION:
            raise HistoryError(f"{self.path!r} is history version {have}, from a newer kladder (this one reads up to "
                               f"{VERSION}); give another --history PATH or upgrade kladder")
        while have < VERSION:
            with self._write() as db:
                have = db.execute("PRAGMA user_version").fetchone()[0]    # another process may have migrated meanwhile
                if have >= VERSION:
                    break
                for statement in _statements(MIGRATIONS[have]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {have + 1}")
                have += 1

    # ------------------------------------------------------------------ writing a climb

    def begin(self, kind: str, spec: str, ref: str, device: str, kladder_version: str, started: str,
              run_id: str | None, fingerprint: dict | None) -> int:
        fp = fingerprint or {}
        with self._write() as db:
            cur = db.execute(
                "INSERT INTO climbs (run_id, kind, spec, ref, device, kladder_version, fingerprint, git_commit, started, "
                "toolchain) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, kind, spec, ref, device, kladder_version, json.dumps(fp, default=str), _commit(fp), started,
                 json.dumps(toolchain(fp))))
            return cur.lastrowid

    def point(self, climb_id: int, row: dict) -> None:
        with self._write() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM points WHERE climb_id = ?", (climb_id,)).fetchone()[0]
            db.execute("INSERT INTO points (climb_id, seq, point_id, rung, status, failure, seconds, stages, hashes, "
                       "nondeterministic, point, load, reused_from) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       (climb_id, seq, row["id"], row["rung"], row["status"], row.get("failure"), row.get("seconds"),
                        json.dumps(row.get("stages") or {}), json.dumps(row.get("hashes") or {}),
                        int(bool(row.get("nondeterministic"))), json.dumps(row.get("point"), default=str),
                        None if row.get("load") is None else json.dumps(row["load"]), row.get("reused_from")))

    def end(self, climb_id: int, ended: str, verdict: str, exit_code: int, fingerprint: dict | None,
            device_name: str | None, rungs: list[dict], golden: dict | None = None, shard: str | None = None) -> None:
        fp = fingerprint or None
        with self._write() as db:
            if fp:
                db.execute("UPDATE climbs SET fingerprint = ?, git_commit = ?, toolchain = ? WHERE id = ?",
                           (json.dumps(fp, default=str), _commit(fp), json.dumps(toolchain(fp)), climb_id))
            db.execute("UPDATE climbs SET ended = ?, verdict = ?, exit_code = ?, device_name = ?, golden = ?, shard = ? "
                       "WHERE id = ?", (ended, verdict, exit_code, device_name, None if golden is None else json.dumps(golden),
                                        shard, climb_id))
            db.executemany("INSERT OR REPLACE INTO rungs (climb_id, rung, verdict, seconds) VALUES (?,?,?,?)",
                           [(climb_id, r["rung"], r["verdict"], r["seconds"]) for r in rungs])

    # ------------------------------------------------------------------ reading

    @_reading
    def climbs(self, spec: str | None = None, limit: int | None = None) -> list[dict]:
        """Newest first, each with its point counts by status."""
        where, args = ("WHERE spec = ?", [spec]) if spec else ("", [])
        q = f"SELECT * FROM climbs {where} ORDER BY id DESC" + (f" LIMIT {int(limit)}" if limit else "")
        out = []
        for r in self.db.execute(q, args).fetchall():
            d = self._climb_row(r)
            if d is None:
                continue
            d["counts"] = dict(self.db.execute("SELECT status, COUNT(*) FROM points WHERE climb_id = ? GROUP BY status",
                                               (r["id"],)).fetchall())
            out.append(d)
        return out

    @_reading
    def climb(self, ref: str) -> dict | None:
        """A climb by its number or its run id."""
        if ref.isdigit():
            r = self.db.execute("SELECT * FROM climbs WHERE id = ?", (int(ref),)).fetchone()
        else:
            r = self.db.execute("SELECT * FROM climbs WHERE run_id = ?", (ref,)).fetchone()
        return None if r is None else self._climb_row(r)

    @_reading
    def points(self, climb_id: int) -> list[dict]:
        rows = self.db.execute("SELECT * FROM points WHERE climb_id = ? ORDER BY seq", (climb_id,)).fetchall()
        out = []
        for r in rows:
            where = f"climb #{climb_id}'s point {r['seq']} ({r['point_id']!r})"
            stages, hashes = self._json(r["stages"] or "{}", where, "stages"), self._json(r["hashes"] or "{}", where, "hashes")
            point = self._json(r["point"] or "null", where, "point", (dict, type(None)))
            load = self._json(r["load"], where, "load") if r["load"] else None
            if BAD in (stages, hashes, point, load):
                continue
            out.append({"id": r["point_id"], "rung": r["rung"], "status": r["status"], "failure": r["failure"],
                        "seconds": r["seconds"], "stages": stages, "hashes": hashes,
                        "nondeterministic": bool(r["nondeterministic"]), "point": point, "load": load,
                        "reused_from": r["reused_from"]})
        return out

    def point_seconds(self, spec: str, device: str, climbs: int = 3) -> list[tuple[dict, float]]:
        """(point, seconds) of every point the newest `climbs` finished climbs and pytest runs of
        `spec` on `device` ran, a climb run with --shard left out (its points are a slice): what
        shard.py deals by."""
        ids = [r[0] for r in self.db.execute(
            "SELECT id FROM climbs WHERE spec = ? AND device = ? AND ended IS NOT NULL AND shard IS NULL "
            "AND kind IN ('climb', 'pytest') ORDER BY id DESC LIMIT ?", (spec, device, int(climbs))).fetchall()]
        out = []
        for i in ids:
            for r in self.db.execute("SELECT point, seconds FROM points WHERE climb_id = ? AND seconds > 0 AND point "
                                     "IS NOT NULL", (i,)).fetchall():
                try:
                    point = json.loads(r["point"])
                except ValueError:
                    continue
                if isinstance(point, dict):
                    out.append((point, float(r["seconds"])))
        return out

    def last_failures(self, spec: str, ref: str | None = None) -> tuple[int | None, list[str]]:
        """The spec's last finished climb (of `ref`, where given and climbed; else of any ref) and the
        ids of its points that failed or were flaky (--lf)."""
        q = "SELECT id FROM climbs WHERE kind = 'climb' AND spec = ? AND ended IS NOT NULL"
        row = None
        if ref is not None:
            row = self.db.execute(q + " AND ref = ? ORDER BY id DESC LIMIT 1", (spec, ref)).fetchone()
        if row is None:
            row = self.db.execute(q + " ORDER BY id DESC LIMIT 1", (spec,)).fetchone()
        if row is None:
            return None, []
        ids = self.db.execute("SELECT point_id FROM points WHERE climb_id = ? AND status IN ('failed', 'flaky') ORDER BY seq",
                              (row["id"],)).fetchall()
        return row["id"], [r["point_id"] for r in ids]

    @_reading
    def rungs(self, climb_id: int) -> dict[int, dict]:
        rows = self.db.execute("SELECT * FROM rungs WHERE climb_id = ?", (climb_id,)).fetchall()
        return {r["rung"]: {"verdict": r["verdict"], "seconds": r["seconds"]} for r in rows}

    def _json(self, text, where: str, field: str, kinds=dict):
        """A JSON column as kladder wrote it (an object, by default), or BAD with the row named in `damaged`."""
        try:
            v = json.loads(text)
        except (TypeError, ValueError, RecursionError) as e:
            self.damaged.append(f"{where}: {field} is not JSON ({_short(text)}: {e})")
            return BAD
        if not isinstance(v, kinds):
            self.damaged.append(f"{where}: {field} is a {type(v).__name__} ({_short(text)}), not what kladder writes")
            return BAD
        return v

    def _climb_row(self, r: sqlite3.Row) -> dict | None:
        d = dict(r)
        where = f"climb #{d['id']}"
        d["fingerprint"] = self._json(d["fingerprint"] or "{}", where, "fingerprint")
        d["toolchain"] = self._json(d.get("toolchain") or "{}", where, "toolchain")
        d["golden"] = self._json(d["golden"], where, "golden") if d.get("golden") else None
        return None if BAD in (d["fingerprint"], d["toolchain"], d["golden"]) else d

    # ------------------------------------------------------------------ golden hashes

    def keep_golden(self, spec: str, target: dict, climb_id: int, recorded: str, points: list[dict]) -> int:
        key = json.dumps(target, sort_keys=True)
        with self._write() as db:
            db.execute("DELETE FROM golden WHERE spec = ? AND target = ?", (spec, key))
            db.executemany("INSERT OR REPLACE INTO golden (spec, target, point_id, hashes, climb_id, recorded, toolchain) "
                           "VALUES (?,?,?,?,?,?,?)",
                           [(spec, key, p["id"], json.dumps(p["hashes"]), climb_id, recorded,
                             json.dumps(target)) for p in points])
        return len(points)

    @_reading
    def golden(self, spec: str, target: dict | None = None) -> list[dict]:
        """The golden hashes of `spec`: for `target` only, or for every target it has."""
        q, args = "SELECT * FROM golden WHERE spec = ?", [spec]
        if target is not None:
            q, args = q + " AND target = ?", [spec, json.dumps(target, sort_keys=True)]
        out = []
        for r in self.db.execute(q, args).fetchall():
            where = f"the golden row of spec {spec!r}, point {r['point_id']!r}"
            hashes, kept_for = self._json(r["hashes"], where, "hashes"), self._json(r["target"], where, "target")
            if BAD not in (hashes, kept_for):
                out.append({"id": r["point_id"], "hashes": hashes, "recorded": r["recorded"], "target": kept_for,
                            "climb_id": r["climb_id"]})
        return out


BAD = object()        # a column that is not what kladder wrote (History._json)


def _short(text) -> str:
    t = repr(text)
    return t if len(t) <= 60 else t[:57] + "..."


def _statements(script: str) -> list[str]:
    lines = [line.split("--")[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _commit(fp: dict) -> str | None:
    git = fp.get("git") or {}
    return git.get("commit") if isinstance(git, dict) else None


def toolchain(fp: dict) -> dict:
    """What a kernel's bits follow: the device and the versions that compile and run it."""
    dev = fp.get("device") or {}
    return {"device": dev.get("name") if isinstance(dev, dict) else None, "torch": fp.get("torch"),
            "triton": fp.get("triton"), "cuda": fp.get("cuda"), "rocm": fp.get("rocm"), "driver": fp.get("driver")}
