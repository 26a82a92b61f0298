"""The viewer's index: a DuckDB file built once per dataset, laid out for fast window queries.

It holds the timeline's tracks, every event reduced to (id, track, lane, ts, dur, name) with
timestamps rebased to the run start, and a pyramid of pre-aggregated per-bucket summaries so a
zoomed-out view reads thousands of rows instead of millions. Events are sorted by duration class
(`lvl`) and then by time, so the zone maps DuckDB keeps per row group skip everything outside a
window. Tracks and lanes are the dataset's (``tracks``, ``events.lane``, decided by
``model.tracks``); the index only numbers the tracks in display order. The index lives in
``DATASET/_viewer/`` (or, when the dataset is read-only, in the user's private cache folder)
and is rebuilt when the dataset's files change, or when the index file is no longer as it was
built (its size and hash are kept beside it, ``index-vN.check``).

An index file is read as untrusted input (it may come with a dataset someone sent): its table
names are never pasted into SQL, and the connections that read it may open no file outside the
dataset folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from kinetoscope.dataset.directory import part_check
from kinetoscope.format.files import atomic_write_bytes, in_tree
from kinetoscope.format.private_dirs import private_dir, user_cache_root
from kinetoscope.model import kinds
from kinetoscope.model.kinds import KIND_CODES
from kinetoscope.query.dataset import Dataset, lock_down

INDEX_VERSION = 11  # 9: ev_ops and lod_ops, framework tracks without their Python frames; 10: counters' time span;
# 11: a pyramid from RAW_BUDGET_EVENTS = 50,000 events (was 250,000)
FIRST_BOUND_NS = 1024  # duration classes are powers of four from ~1 us
# A window expected to hold fewer events is aggregated on the fly; a dataset of more gets a zoom pyramid. At
# 250,000 the public V100 trace (151,388 events, a quarter of them instants, each sent as a slice when no
# pyramid merges them) answered a zoomed-out window in 61-66 ms; with a pyramid, 28-32 ms.
RAW_BUDGET_EVENTS = 50_000
TYPICAL_WIDTH_PX = 2500
INDEX_MEMORY_LIMIT = "4GB"
NO_FILE_ACCESS: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False, "lock_configuration": True}
# Every table `_build` writes; `lod` only when the dataset is large enough for a pyramid.
INDEX_TABLES = ("meta", "view_tracks", "names", "categories", "kinds", "ev", "lod", "ev_ops", "lod_ops", "fl_src",
                "fl_dst", "counter_tracks", "cv")
_OPTIONAL_TABLES = frozenset({"lod", "lod_ops"})  # pyramid levels: only for traces that need them

@dataclass(frozen=True)
class Levels:
    """Duration classes (`bounds_ns`) and the subset that has a pre-aggregated pyramid level."""

    bounds_ns: tuple[int, ...]
    pyramid_ns: tuple[int, ...]
    max_dur_ns: int

    def lvl_of_sql(self, column: str) -> str:
        """SQL for the duration class of `column`: how many bounds are <= it."""
        terms = " + ".join(f"({column} >= {b})::INT" for b in self.bounds_ns)
        return f"({terms})::TINYINT" if terms else "0::TINYINT"

    def lookback_ns(self, lvl: int) -> int:
        """Longest possible duration of an event in class `lvl`."""
        return self.bounds_ns[lvl] if lvl < len(self.bounds_ns) else self.max_dur_ns


def plan_levels(count: int, span_ns: int, max_dur_ns: int) -> Levels:
    """Chooses the duration classes and pyramid levels for `count` events over `span_ns`."""
    bounds: list[int] = []
    bound = FIRST_BOUND_NS
    while bound <= max(span_ns, 1):
        bounds.append(bound)
        bound *= 4
    raw_limit_ns = RAW_BUDGET_EVENTS * max(span_ns, 1) / max(count, 1) / TYPICAL_WIDTH_PX
    pyramid = tuple(b for b in bounds if b >= raw_limit_ns and b * 16 <= span_ns) if count > RAW_BUDGET_EVENTS else ()
    return Levels(tuple(bounds), pyramid, max(max_dur_ns, 1))


# (done, total, what is being done): how far the build is, in per cent of its expected time.
IndexProgress = Callable[[int, int, str], None]
# Each step's share of the build, in per cent (as measured on the generator's 1-million-event
# spec); the pyramid levels share theirs.
STEP_WEIGHTS = {"tracks": 1, "stage": 25, "strings": 2, "ev": 25, "view_tracks": 2, "ev_ops": 12, "pyramid": 16,
                "side": 15, "write": 2}


class _Steps:
    """Reports to `progress` as each step of the build begins; keeps how long each took (`took_s`)."""

    def __init__(self, progress: IndexProgress | None) -> None:
        self.progress = progress
        self.done = 0.0
        self.took_s: dict[str, float] = {}
        self._current: tuple[str, float, float] | None = None

    def begin(self, step: str, message: str, share: float = 1.0) -> None:
        self._end()
        self._current = (step, time.perf_counter(), STEP_WEIGHTS[step] * share)
        if self.progress is not None:
            self.progress(min(int(self.done), 99), 100, message)

    def finish(self) -> None:
        self._end()
        if self.progress is not None:
            self.progress(100, 100, "index written")

    def _end(self) -> None:
        if self._current is not None:
            step, began, weight = self._current
            self.took_s[step] = self.took_s.get(step, 0.0) + time.perf_counter() - began
            self.done += weight
        self._current = None


class ViewerIndex:
    """A read-only DuckDB index over one dataset; `cursor()` gives a per-thread connection."""

    def __init__(self, dataset: Dataset, con: duckdb.DuckDBPyConnection) -> None:
        self.dataset = dataset
        self._con = con
        self._lock = threading.Lock()
        self._repair_lock = threading.Lock()
        self.generation = 0  # how many times the index was rebuilt under this object (`repair`)
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        self.t0_ns = int(meta["t0_ns"])
        self.span_ns = int(meta["span_ns"])
        self.event_count = int(meta["event_count"])
        self.levels = Levels(
            tuple(int(x) for x in meta["bounds_ns"].split(",") if x),
            tuple(int(x) for x in meta["pyramid_ns"].split(",") if x),
            int(meta["max_dur_ns"]),
        )

    def cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            return self._con.cursor()

    def close(self) -> None:
        self._con.close()

    def repair(self, seen_generation: int) -> None:
        """Rebuilds a file found damaged while serving (unless another request already did since
        `seen_generation`) and serves the new one; requests running on the old one may fail."""
        with self._repair_lock:
            if self.generation != seen_generation:
                return
            fresh = ViewerIndex.open(self.dataset, rebuild=True)
            with self._lock:
                self._con, self.generation = fresh._con, self.generation + 1

    @staticmethod
    def open(dataset: Dataset, *, rebuild: bool = False, progress: IndexProgress | None = None) -> ViewerIndex:
        """The index of `dataset`, built first when missing or stale, on one connection that reads
        each part of the dataset once: its footer when the views are made (DuckDB keeps it), its
        columns when the index is built. `progress` follows a build (not called when none is needed)."""
        path = index_path(dataset)
        wanted = _fingerprint(dataset)
        con = duckdb.connect(":memory:")
        con.execute("SET GLOBAL parquet_metadata_cache = true")
        dataset.create_views(con)
        if rebuild or stored_fingerprint(path) != wanted or not _intact(path):
            _build(con, path, wanted, _Steps(progress))
        remove_older_versions(path.parent)
        con.execute("SET threads TO 2")
        con.execute("ATTACH ? AS ix (READ_ONLY)", [str(path)])
        found = {row[0] for row in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'ix'").fetchall()}
        for table in INDEX_TABLES:  # our own names only: the file's are data, never SQL
            if table in found:
                con.execute(f'CREATE VIEW "{table}" AS SELECT * FROM ix."{table}"')
        lock_down(con, dataset, memory_limit=INDEX_MEMORY_LIMIT, temp_dir=_spill_dir(path))
        return ViewerIndex(dataset, con)


def index_path(dataset: Dataset) -> Path:
    """``DATASET/_viewer/`` when writable, else a folder of the user's private cache (never /tmp)."""
    folder = in_tree(dataset.path, dataset.path / "_viewer")  # a link out of the dataset: refused
    with contextlib.suppress(OSError):
        folder.mkdir(exist_ok=True)
    if not os.access(folder, os.W_OK):
        digest = hashlib.sha256(str(dataset.path).encode()).hexdigest()[:16]
        folder = private_dir(user_cache_root() / "viewer") / digest
        folder.mkdir(exist_ok=True, mode=0o700)
    return folder / f"index-v{INDEX_VERSION}.duckdb"


_VERSIONED = re.compile(r"index-v(\d+)\.(duckdb|clocks\.json|check)")


def remove_older_versions(folder: Path) -> list[Path]:
    """Remove the index files an earlier kinetoscope left in ``folder`` (``index-vN.duckdb`` and
    its clocks, N older than this version), which nothing reads once this one has built its own; the
    files removed. A file that cannot be removed stays (it costs disk, nothing else)."""
    removed = []
    for path in folder.iterdir():
        found = _VERSIONED.fullmatch(path.name)
        if found is None or int(found.group(1)) >= INDEX_VERSION or not path.is_file():
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


def _fingerprint(dataset: Dataset) -> str:
    return hashlib.sha256(f"{INDEX_VERSION}\n{dataset.path}\n{dataset.fingerprint()}".encode()).hexdigest()


def _check_path(path: Path) -> Path:
    """Beside the index: its size and BLAKE2b hash as built (``dataset.directory.part_check``)."""
    return path.with_suffix(".check")


def _intact(path: Path) -> bool:
    """Whether the index file is as it was built: a damaged one (DuckDB answers "Corrupt database
    file" only when a query reaches the damaged block, mid-session) is built again. Reads the file
    once (about 1 GB/s)."""
    try:
        return _check_path(path).read_text() == part_check(path)
    except (OSError, UnicodeDecodeError):
        return False


def stored_fingerprint(path: Path) -> str | None:
    """The fingerprint the index at `path` was built for; None when it has none, or lacks a table
    (a damaged file is rebuilt, not served)."""
    if not path.is_file():
        return None
    try:
        with duckdb.connect(str(path), read_only=True, config=NO_FILE_ACCESS) as con:
            found = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
            row = con.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
    except duckdb.Error:
        return None
    return str(row[0]) if row and set(INDEX_TABLES) - _OPTIONAL_TABLES <= found else None


def is_damage(exc: BaseException) -> bool:
    """Whether a DuckDB error says the index file is damaged (a block's checksum, a bad block)."""
    return isinstance(exc, duckdb.Error) and "Corrupt database file" in str(exc)


def _build(con: duckdb.DuckDBPyConnection, path: Path, fingerprint: str, steps: _Steps) -> None:
    """Writes the index into `path` from `con`'s dataset views: new tables go to the index file,
    the dataset's names still resolve to the views."""
    partial = path.with_suffix(".building")
    partial.unlink(missing_ok=True)
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET temp_directory = '{_sql_text(str(_spill_dir(path)))}'")
    scratch = path.with_suffix(".scratch")
    scratch.unlink(missing_ok=True)
    con.execute("ATTACH ? AS build", [str(partial)])
    con.execute("ATTACH ? AS scratch", [str(scratch)])
    con.execute("SET search_path = 'build.main,scratch.main,memory.main'")
    try:
        _build_tables(con, steps)
        con.execute("INSERT INTO meta VALUES ('fingerprint', ?)", [fingerprint])
    finally:
        con.execute("RESET search_path")
        con.execute("DETACH scratch")
        scratch.unlink(missing_ok=True)
    steps.begin("write", "writing the index file")
    con.execute("CHECKPOINT build")
    con.execute("DETACH build")
    partial.replace(path)
    atomic_write_bytes(_check_path(path), part_check(path).encode())
    steps.finish()


def _spill_dir(path: Path) -> Path:
    """Where the connection of the index at `path` spills: beside it, in the dataset's folder."""
    return Path(f"{path.with_suffix('.building')}.tmp")


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def _build_tables(con: duckdb.DuckDBPyConnection, steps: _Steps) -> None:
    """Every index table, reading each dataset table once: `events` into a staging table that the
    statistics, the string tables and `ev` are computed from."""
    steps.begin("tracks", "numbering the tracks")
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")
    con.execute("CREATE TABLE kinds (kind_id SMALLINT, kind VARCHAR)")
    con.executemany("INSERT INTO kinds VALUES (?, ?)", [[code, kind] for kind, code in KIND_CODES.items()])
    _number_tracks(con)
    steps.begin("stage", "reading the events")
    _stage_events(con)
    steps.begin("strings", "collecting names and categories")
    t0, t_end, count, max_dur = con.execute(
        "SELECT coalesce(min(ts_ns), 0), coalesce(max(ts_ns + dur), 0), count(*), coalesce(max(dur), 0) FROM stage"
    ).fetchone() or (0, 0, 0, 0)
    levels = plan_levels(int(count), int(t_end - t0), int(max_dur))
    con.execute("CREATE TABLE names AS SELECT (row_number() OVER (ORDER BY name) - 1)::INT name_id, name"
                " FROM (SELECT DISTINCT name FROM stage)")
    con.execute("CREATE TABLE categories AS SELECT (row_number() OVER (ORDER BY category) - 1)::SMALLINT cat_id,"
                " category FROM (SELECT DISTINCT category FROM stage)")
    steps.begin("ev", "sorting the events by duration class and time")
    _build_events(con, int(t0), levels)
    con.execute("DROP TABLE scratch.stage")
    steps.begin("view_tracks", "counting the events of each track")
    _build_tracks(con)
    steps.begin("ev_ops", "laying out the framework tracks without their Python frames")
    _build_ops_events(con)
    for level, bucket_ns in enumerate(levels.pyramid_ns):
        steps.begin("pyramid", f"summarising level {level + 1} of {len(levels.pyramid_ns)} of the zoom pyramid",
                    share=1 / len(levels.pyramid_ns))
        _build_pyramid_level(con, levels, bucket_ns)
        _build_pyramid_level(con, levels, bucket_ns, source="ev_ops", target="lod_ops")
    steps.begin("side", "flows and counters")
    _build_side_tables(con, int(t0))
    values = {"t0_ns": t0, "span_ns": t_end - t0, "event_count": count, "max_dur_ns": levels.max_dur_ns,
              "bounds_ns": ",".join(map(str, levels.bounds_ns)), "pyramid_ns": ",".join(map(str, levels.pyramid_ns))}
    con.executemany("INSERT INTO meta VALUES (?, ?)", [[k, str(v)] for k, v in values.items()])


def _number_tracks(con: duckdb.DuckDBPyConnection) -> None:
    """The dataset's tracks, numbered in display order (run, rank, session, then the track's `sort`).

    `source_id` is the dataset's `track_id`; `lanes` how many rows the track's events need. Tracks of no
    process (a device's synchronizations, an allocator: pid -1) take their session's host pid, so they are
    grouped with the process whose trace recorded them rather than in a group of their own."""
    con.execute("""
        CREATE TEMP TABLE numbered_tracks AS
        SELECT (row_number() OVER (ORDER BY t.run, t.rank, t.session, t.sort, t.track_id) - 1)::INT AS track_id,
               t.track_id AS source_id, t.run, t.rank, t.session,
               CASE WHEN t.pid >= 0 THEN t.pid
                    ELSE coalesce(max(t.pid) OVER (PARTITION BY t.run, t.rank, t.session), -1) END AS pid,
               t.layer, t.tid, t.device, t.stream,
               coalesce(t.name, '') AS name, t.sort, greatest(coalesce(t.lanes, 1), 1)::INT AS lanes
        FROM tracks t""")


def _stage_events(con: duckdb.DuckDBPyConnection) -> None:
    """The one read of `events`: the columns the index needs, each event on its numbered track."""
    con.execute("""
        CREATE TABLE scratch.stage AS
        SELECT e.id, t.track_id AS track, greatest(coalesce(e.lane, 0), 0)::SMALLINT AS lane, e.ts_ns,
               greatest(e.dur_ns, 0) AS dur, coalesce(e.name, '') AS name, coalesce(e.category, '') AS category,
               coalesce(k.kind_id, -1)::SMALLINT AS kind
        FROM events e
        JOIN numbered_tracks t ON t.run = e.run AND t.rank = e.rank AND t.source_id = e.track_id
        LEFT JOIN kinds k ON k.kind = e.kind""")


def _build_tracks(con: duckdb.DuckDBPyConnection) -> None:
    """`view_tracks`: the numbered tracks with how many events each holds."""
    con.execute("""
        CREATE TABLE view_tracks AS
        SELECT t.*, coalesce(n.events, 0) AS events
        FROM numbered_tracks t LEFT JOIN (SELECT track, count(*) AS events FROM ev GROUP BY track) n
          ON n.track = t.track_id
        ORDER BY t.track_id""")
    con.execute("DROP TABLE numbered_tracks")


def _build_events(con: duckdb.DuckDBPyConnection, t0_ns: int, levels: Levels) -> None:
    con.execute(f"""
        CREATE TABLE ev AS
        SELECT s.id, s.track, s.lane, s.ts_ns - {t0_ns} AS ts, s.dur, n.name_id AS name, c.cat_id AS cat, s.kind,
               {levels.lvl_of_sql('s.dur')} AS lvl
        FROM stage s
        JOIN names n ON n.name = s.name
        JOIN categories c ON c.category = s.category
        ORDER BY lvl, ts""")


def _build_ops_events(con: duckdb.DuckDBPyConnection) -> None:
    """`ev_ops`: the framework tracks that hold Python frames, without them, each row in the lane of
    its nesting depth among the rows left. `view_tracks.ops_lanes` is how many lanes that needs (0
    for a track without Python frames). Ids are the events' own, so a selection is the same either way."""
    python = KIND_CODES[kinds.PYTHON]
    rows: pa.Table = con.sql(f"""
        WITH py AS (SELECT DISTINCT track FROM ev WHERE kind = {python})
        SELECT ev.id, ev.track, ev.ts, ev.dur, ev.name, ev.cat, ev.kind, ev.lvl
        FROM ev JOIN py ON py.track = ev.track WHERE ev.kind <> {python}
        ORDER BY ev.track, ev.ts, ev.dur DESC, ev.id""").to_arrow_table()
    track, ts, dur = (rows.column(c).to_numpy().astype(np.int64) for c in ("track", "ts", "dur"))
    lane = pa.array(np.maximum(nesting_depth(track, ts, dur), 0).astype(np.int16))
    con.register("ops_rows", rows.append_column("lane", lane))
    con.execute("""CREATE TABLE ev_ops AS SELECT id, track, lane, ts, dur, name, cat, kind, lvl FROM ops_rows
                   ORDER BY lvl, ts""")
    con.unregister("ops_rows")
    con.execute("ALTER TABLE view_tracks ADD COLUMN ops_lanes INT DEFAULT 0")
    con.execute("""UPDATE view_tracks SET ops_lanes = n.lanes
                   FROM (SELECT track, max(lane) + 1 AS lanes FROM ev_ops GROUP BY track) n
                   WHERE n.track = view_tracks.track_id""")


def nesting_depth(track: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Depth of each row among the rows of its track, for rows sorted by (track, ts, longest first):
    the intervals started before it minus those ended at or before its start (an instant counts
    the intervals around it)."""
    if not len(track):
        return np.zeros(0, np.int64)
    first = np.searchsorted(track, track, side="left")  # each row's track's first row
    long = dur > 0
    started: np.ndarray = np.cumsum(long) - long
    started -= started[first]
    span = int((ts + dur).max()) - min(int(ts.min()), 0) + 1
    base = track * span - min(int(ts.min()), 0)
    ends = np.sort(base[long] + (ts + dur)[long])
    ended = np.searchsorted(ends, base + ts, side="right") - np.searchsorted(ends, track * span, side="left")
    depth: np.ndarray = started - ended
    return depth


def _build_pyramid_level(con: duckdb.DuckDBPyConnection, levels: Levels, bucket_ns: int, *, source: str = "ev",
                         target: str = "lod") -> None:
    """One pyramid level of `source` (`ev`, or `ev_ops`) into `target` (`lod`, `lod_ops`): our own names."""
    lvl_limit = levels.bounds_ns.index(bucket_ns)  # events in classes <= this are shorter than bucket_ns
    create = f"CREATE TABLE IF NOT EXISTS {target} (bucket_ns BIGINT, track INT, lane SMALLINT, bucket BIGINT," \
             " cnt BIGINT, busy BIGINT, first_ts BIGINT, last_end BIGINT, top_name INT, top_dur BIGINT)"
    con.execute(create)
    con.execute(f"""
        INSERT INTO {target}
        SELECT {bucket_ns}, track, lane, ts // {bucket_ns} AS bucket, count(*), sum(dur), min(ts), max(ts + dur),
               arg_max(name, dur), max(dur)
        FROM {source} WHERE lvl <= {lvl_limit}
        GROUP BY track, lane, bucket ORDER BY bucket""")


def _build_side_tables(con: duckdb.DuckDBPyConnection, t0_ns: int) -> None:
    """Flows in both directions and the counters, each read once from the dataset."""
    con.execute("CREATE TABLE fl_src AS SELECT src_id AS src, dst_id AS dst, kind FROM flows ORDER BY src")
    con.execute("CREATE TABLE fl_dst AS SELECT src, dst, kind FROM fl_src ORDER BY dst")
    con.execute("CREATE TEMP TABLE counter_rows AS SELECT run, rank, name, unit, device, ts_ns, value FROM counters")
    con.execute(f"""
        CREATE TABLE counter_tracks AS
        SELECT (row_number() OVER (ORDER BY run, rank, device, name) - 1)::INT AS counter_id, run, rank,
               name, any_value(unit) AS unit, device, count(*) AS samples, min(value) AS min_value,
               max(value) AS max_value, min(ts_ns) - {t0_ns} AS first_ts, max(ts_ns) - {t0_ns} AS last_ts
        FROM counter_rows GROUP BY run, rank, name, device""")
    con.execute(f"""
        CREATE TABLE cv AS
        SELECT k.counter_id AS cid, c.ts_ns - {t0_ns} AS ts, c.value
        FROM counter_rows c JOIN counter_tracks k
          ON k.run = c.run AND k.rank = c.rank AND k.name = c.name AND k.device = c.device
        ORDER BY ts""")
    con.execute("DROP TABLE counter_rows")
