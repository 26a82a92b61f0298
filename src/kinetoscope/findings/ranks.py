"""One rank's tables for the rules, with its columns as numpy arrays read once."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis.tables import (
    Lookup,
    Tables,
    code_view,
    id_lookup,
    ints,
    is_in,
    length,
    matches,
    merge,
    of_rank,
    read_only,
)
from kinetoscope.format.viewer_links import timeline_query
from kinetoscope.model import graphs, kinds, launch_calls

STEP_PREFIX = kinds.STEP_PREFIX
STEP_PATTERN = "^" + STEP_PREFIX + r"\d+$"
# Deep links open the viewer's timeline; its times are offsets from the dataset's first event.
LINK_MARGIN_NS = 1_000
ALL_ROWS = slice(None)


def viewer_link(t0_ns: int, start_ns: int, end_ns: int, event_id: int) -> str:
    """The viewer's deep link (``format.viewer_links``) to ``[start_ns, end_ns)`` with the event selected."""
    return "?" + timeline_query(view_window(t0_ns, start_ns, end_ns), event_id)


def view_window(t0_ns: int, start_ns: int, end_ns: int) -> tuple[int, int]:
    """The viewer's time range (ns from ``t0_ns``) that frames ``[start_ns, end_ns)`` with a margin."""
    span = max(end_ns - start_ns, 1)
    lo = max(start_ns - t0_ns - span // 10 - LINK_MARGIN_NS, 0)
    hi = end_ns - t0_ns + span // 10 + LINK_MARGIN_NS
    return lo, hi


class RankData:
    """The events of one (run, rank), and that rank's rows of ``sessions`` and ``warnings``."""

    def __init__(self, run: str, rank: int, events: pa.Table, tables: Tables, t0_ns: int) -> None:
        self.run, self.rank, self.events, self.t0_ns = run, rank, events, t0_ns
        self.sessions = _rows_of(tables.get("sessions"), run, rank)
        self.warnings = _rows_of(tables.get("warnings"), run, rank)
        self.counters = _rows_of(tables.get("counters"), run, rank)
        self.all_counters = tables.get("counters")  # every rank's: what is found on it once serves each rank
        self._ints: dict[str, np.ndarray] = {}

    def ints(self, name: str) -> np.ndarray:
        if name not in self._ints:
            self._ints[name] = ints(self.events, name)
        return self._ints[name]

    def names(self) -> np.ndarray:
        """Each row's name (None: null)."""
        return self.names_at(slice(None))

    def names_at(self, rows: np.ndarray | slice) -> np.ndarray:
        """The names of ``rows`` (positions or a mask; None: null); of a dictionary column, the
        distinct names made Python strings once and gathered for these rows only, not a string
        made per row of the rank."""
        if self._name_codes is None:
            return self._plain_names[rows]
        values, distinct, nulls = self._name_codes
        names: np.ndarray = distinct[values[rows]]
        if nulls is not None:
            names[nulls[rows]] = None
        return names

    def top_names_at(self, rows: np.ndarray, weights: np.ndarray, top: int = 5) -> list[dict[str, object]]:
        """``top_names(self.names_at(rows), weights, top)``, grouped by the name codes of ``rows``
        where the column is a dictionary: no name, nor string, per row."""
        if self._name_codes is None:
            return top_names(self.names_at(rows), weights, top)
        values, distinct, nulls = self._name_codes
        codes = values[rows]
        if nulls is None:
            return top_coded(codes, distinct, weights, top)
        return top_coded(np.where(nulls[rows], len(distinct), codes), [*distinct, None], weights, top)

    def name_of(self, row: int) -> str | None:
        """The name of one row (None: null)."""
        found = self.names_at(np.asarray([row], dtype=np.int64))[0]
        return None if found is None else str(found)

    @cached_property
    def _name_codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """(each row's code, the distinct names, where the name is null or None) of a dictionary
        column; None for a plain one."""
        column = self.events.column("name")
        if not pa.types.is_dictionary(column.type):
            return None
        values, distinct = code_view(self.events, "name")
        nulls = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool) if column.null_count else None
        return values, np.asarray(distinct, dtype=object), nulls

    @cached_property
    def _plain_names(self) -> np.ndarray:
        return np.asarray(self.events.column("name").to_numpy(zero_copy_only=False), dtype=object)

    def kind(self, *wanted: str) -> np.ndarray:
        return is_in(self.events, "kind", wanted)

    def kind_at(self, rows: np.ndarray, *wanted: str) -> np.ndarray:
        """Whether each of ``rows`` is of a kind in ``wanted`` (null: no), read from the kinds'
        codes for these rows only, not a mask of the rank."""
        code, values = code_view(self.events, "kind")
        chosen = np.asarray([value in wanted for value in values] or [False], dtype=bool)
        found: np.ndarray = chosen[code[rows]]
        return found

    @cached_property
    def step_rows(self) -> np.ndarray:
        """Rows of the ``ProfilerStep#N`` ops, in row order; read-only (several rules ask)."""
        rows = np.flatnonzero(self.name_matches(STEP_PATTERN))
        return read_only(rows[self.kind_at(rows, *kinds.OP_KINDS)])

    def name_in(self, values: Sequence[str]) -> np.ndarray:
        return is_in(self.events, "name", values)

    def name_matches(self, pattern: str) -> np.ndarray:
        """Whether each row's name matches ``pattern`` (null: no); over the distinct names only."""
        return matches(self.events, "name", pattern)

    def ends(self, rows: np.ndarray | slice = ALL_ROWS) -> np.ndarray:
        """The end (ns) of each of ``rows`` (positions or a mask; default: every row), found for those
        rows alone: kept for every row, the ends took 8 bytes per event while the rules ran."""
        ends: np.ndarray = self.ints("ts_ns")[rows] + self.ints("dur_ns")[rows]
        return ends

    @cached_property
    def wall_ns(self) -> int:
        """From the first event's start to the last one's end."""
        if not self.events.num_rows:
            return 0
        return int(self.ends().max() - self.ints("ts_ns").min())

    @cached_property
    def device_work(self) -> np.ndarray:
        return self.kind(*kinds.DEVICE_WORK_KINDS)

    @cached_property
    def device_rows(self) -> np.ndarray:
        """Rows of device work inside the steps (all of it without steps); read-only."""
        return read_only(np.flatnonzero(self.device_work & self.in_steps()))

    @cached_property
    def device_busy(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) of the union of ``device_rows``' intervals, sorted and disjoint."""
        rows = self.device_rows
        starts, ends = merge(self.ints("ts_ns")[rows], self.ends(rows))
        return read_only(starts), read_only(ends)

    @cached_property
    def device_span_ns(self) -> int:
        """From the first start to the last end of ``device_rows`` (0: none)."""
        starts, ends = self.device_busy
        return int(ends[-1] - starts[0]) if len(starts) else 0

    @cached_property
    def has_steps(self) -> bool:
        return bool((self.ints("step") >= 0).any())

    @cached_property
    def step_count(self) -> int:
        steps = self.ints("step")
        numbered = steps[steps >= 0]
        if len(numbered) and int(numbered.max()) <= 4 * len(numbered) + 1024:  # step numbers: counted, not sorted
            return int(np.count_nonzero(np.bincount(numbered)))
        return len(np.unique(numbered))

    def in_steps(self) -> np.ndarray:
        """Rows inside a ``ProfilerStep#N``; every row when the trace has no steps. Found once, read-only."""
        inside: np.ndarray = self._in_steps
        return inside

    @cached_property
    def _in_steps(self) -> np.ndarray:
        steps = self.ints("step")
        return read_only(steps >= 0 if self.has_steps else np.ones(len(steps), dtype=bool))

    def steady_state(self) -> np.ndarray:
        """Rows after the first profiled step (every row when the trace has fewer than two steps)."""
        steps = self.ints("step")
        if self.step_count < 2:
            return np.ones(len(steps), dtype=bool)
        later: np.ndarray = steps > steps[steps >= 0].min()
        return later

    @cached_property
    def replay_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of each CUDA/HIP graph replay: its graph launch call's start to its last
        node's end (``model.graphs``); empty where the rank replays none."""
        work = np.flatnonzero(self.device_work)
        call = self.positions(self.ints("launch_id")[work]) if len(work) else work
        known = call >= 0
        work, call = work[known], call[known]
        replayed = self.name_matches(graphs.LAUNCH_PATTERN)[call] if len(call) else np.zeros(0, dtype=bool)
        work, call = work[replayed], call[replayed]
        return graphs.replay_spans(call, self.ints("ts_ns")[call], self.ends(work))

    def cannot_judge(self, needs: tuple[str, ...]) -> tuple[str, str] | None:
        """(why, what to do) when this rank's data cannot support a rule that ``needs``:
        ``device`` (device activity, where the host launched kernels), ``replay_capture`` (the
        capture of the CUDA/HIP graphs that make most of the device time), ``complete`` (no
        events dropped); None when it can."""
        for need in needs:
            found = _CHECKS[need](self)
            if found is not None:
                return found
        return None

    @cached_property
    def launches_without_device_work(self) -> int:
        """Kernel launch calls on a rank that has no device work at all (0 when it has some)."""
        if self.device_work.any():
            return 0
        return int((self.kind(kinds.RUNTIME_CALL) & self.name_matches(launch_calls.KERNEL_LAUNCH_PATTERN)).sum())

    def positions(self, wanted_ids: np.ndarray) -> np.ndarray:
        """Row of each id in ``wanted_ids`` (-1 where absent)."""
        return self._id_lookup(wanted_ids)

    @cached_property
    def _id_lookup(self) -> Lookup:
        return id_lookup(self.events)

    @cached_property
    def top_level_ops(self) -> np.ndarray:
        """Ops with no enclosing op (``ProfilerStep#N`` rows are steps, not ops): each op's time counted once."""
        ops = self.kind(kinds.OP) & ~self.name_matches("^" + STEP_PREFIX)
        parent = self.positions(self.ints("op_id"))
        top: np.ndarray = ops & ((parent < 0) | ~ops[np.maximum(parent, 0)])
        return top

    def op_names(self, rows: np.ndarray) -> np.ndarray:
        """Name of each row's nearest enclosing op (``""`` where none)."""
        at = self.positions(self.ints("op_id")[rows])
        return np.where(at >= 0, self.names_at(np.maximum(at, 0)), "")

    def covered_ns(self, mask: np.ndarray) -> int:
        start = self.ints("ts_ns")[mask]
        return length(start, start + self.ints("dur_ns")[mask])


def _no_device_activity(data: RankData) -> tuple[str, str] | None:
    count = data.launches_without_device_work
    if not count:
        return None
    why = f"{count} kernel launch call(s) but no device activity in the trace"
    return why, "Record the device's activity too (`activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`)."


def _replays_without_capture(data: RankData) -> tuple[str, str] | None:
    if not len(data.replay_spans[0]) or data.name_matches(graphs.BEGIN_CAPTURE_PATTERN).any():
        return None
    work = data.device_rows
    call = data.positions(data.ints("launch_id")[work])
    replayed = (call >= 0) & data.name_matches(graphs.LAUNCH_PATTERN)[np.maximum(call, 0)]
    durations = data.ints("dur_ns")[work]
    share = float(durations[replayed].sum()) / max(float(durations.sum()), 1.0)
    if share <= REPLAY_SHARE:
        return None
    why = (f"{100 * share:.0f}% of the device time is CUDA/HIP graph replays whose capture is not in the trace: "
           "their kernels cannot be tied to the ops that queued them")  # fmt: skip
    return why, "Profile the graph's capture too (a window that includes the first, capturing step)."


def _dropped(data: RankData) -> tuple[str, str] | None:
    dropped = 0
    if data.sessions is not None and "dropped_events" in data.sessions.column_names:
        dropped = sum(int(v or 0) for v in data.sessions.column("dropped_events").to_pylist())
    if not dropped:
        return None
    why = f"the profiler dropped {dropped} event(s): the gaps between device work may be events that were lost"
    return why, "Raise Kineto's buffer limits or profile a shorter window."


REPLAY_SHARE = 0.5  # replays without capture above this share of device time: op attribution cannot judge
_CHECKS = {"device": _no_device_activity, "replay_capture": _replays_without_capture, "complete": _dropped}


def _rows_of(table: pa.Table | None, run: str, rank: int) -> pa.Table | None:
    return None if table is None else of_rank(table, run, rank)


def top_names(names: np.ndarray, weights: np.ndarray, top: int = 5) -> list[dict[str, object]]:
    """The ``top`` names by summed weight: ``[{"name", "ns", "count"}]``, ties in name order (a null
    name is ``"None"``). Grouped by Arrow's dictionary encoding, only the distinct names sorted
    (``RankData.top_names_at`` groups a rank's rows by their codes, with no string per row)."""
    if not len(names):
        return []
    encoded = pc.dictionary_encode(pc.fill_null(pa.array(names, type=pa.string()), "None"))
    return top_coded(encoded.indices.to_numpy(), encoded.dictionary.to_pylist(), weights, top)


def top_coded(
    codes: np.ndarray, labels: Sequence[object] | np.ndarray, weights: np.ndarray, top: int = 5
) -> list[dict[str, object]]:
    """``top_names`` of the rows whose names are ``labels[codes]`` (None: ``"None"``; a label met
    twice is one name): summed per code, then per distinct label, which alone are sorted. A
    fixed-width string array of every row instead (``np.unique`` of the names as ``str``: 4 bytes
    a character of the longest name, copied twice more to sort it) was the largest array any
    rule made."""
    if not len(codes):
        return []
    sums = np.bincount(codes, weights=weights.astype(np.float64), minlength=len(labels))
    counts = np.bincount(codes, minlength=len(labels))
    merged: dict[str, list[float]] = {}  # name -> [summed weight, rows]
    for code in np.flatnonzero(counts).tolist():
        found = merged.setdefault(str(labels[code]), [0.0, 0])
        found[0] += float(sums[code])
        found[1] += int(counts[code])
    names = sorted(merged)
    order = np.argsort(-np.asarray([merged[name][0] for name in names], dtype=np.float64), kind="stable")[:top]
    picked = [(names[i], merged[names[i]]) for i in order.tolist()]
    return [{"name": name, "ns": int(ns), "count": int(count)} for name, (ns, count) in picked]
