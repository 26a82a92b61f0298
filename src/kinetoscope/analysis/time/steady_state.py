"""The steady state of a run: its iterations once warm-up is over, and, in a serving trace, its
phases (prefill and decode).

Iterations are the ``ProfilerStep#N`` rows; without them, the outermost annotation repeated most
(by total time; at least ``MIN_REPEATS`` times), or, where the outermost annotations name
``prefill`` and ``decode``, those; torch's own annotations (``enumerate(DataLoader)#...``,
``Optimizer.*``) are parts of an iteration, not iterations, so without any other the iterations
run from one ``Optimizer.step#...`` to the next. Phases come from those names, else from two clearly apart
clusters of iteration time (the longer at least ``CLUSTER_RATIO`` times the shorter, each with
``MIN_REPEATS`` iterations or more). Warm-up is the leading iterations of a phase longer than
``WARMUP_FACTOR`` times the phase's median; the window starts after them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import codes, ints, strings
from kinetoscope.analysis._tables.masks import is_in, starts_with
from kinetoscope.analysis._tables.rank_slices import RankKey, Tables, per_rank
from kinetoscope.analysis._tables.result_tables import rows
from kinetoscope.analysis._tables.selection import where
from kinetoscope.model import data_loading, kinds

STEP_PREFIX = kinds.STEP_PREFIX
# Annotations torch adds itself around parts of an iteration, never iterations themselves.
DATA_LOADER_PREFIX = data_loading.LOADER_PREFIX
OPTIMIZER_PREFIX, OPTIMIZER_STEP_PREFIX = "Optimizer.", "Optimizer.step#"
MIN_REPEATS = 3
WARMUP_FACTOR = 1.5
CLUSTER_RATIO = 3.0
PHASE_NAMES = ("prefill", "decode")


@dataclass(frozen=True)
class Iterations:
    """One rank's iterations, by start time: what they are, and each one's number and phase name."""

    source: str  # "ProfilerStep" or the annotation's name(s)
    ids: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    numbers: np.ndarray  # the N of ProfilerStep#N, else the iteration's ordinal
    names: list[str]

    @property
    def dur_ns(self) -> np.ndarray:
        found: np.ndarray = self.end_ns - self.start_ns
        return found


@dataclass(frozen=True)
class Phase:
    """The steady part of one phase: ``kept`` and ``warmup`` index the rank's ``Iterations``."""

    name: str
    kept: np.ndarray
    warmup: np.ndarray
    reason: str


def iterations(events: pa.Table) -> Iterations | None:
    """One rank's iterations (None: no steps and no repeated outermost annotation)."""
    framework = is_in(events, "layer", (kinds.FRAMEWORK,))  # masks of the rank's rows: no filter of them all
    steps = where(events, framework & starts_with(events, "name", STEP_PREFIX))
    if steps.num_rows:
        numbers = np.asarray([_step_number(name) for name in strings(steps, "name")], dtype=np.int64)
        longest = _longest_per_number(numbers, ints(steps, "dur_ns"))
        return _sorted("ProfilerStep", steps.take(pa.array(longest)), numbers[longest])
    outer = where(events, framework & is_in(events, "kind", (kinds.USER_ANNOTATION,)) & (ints(events, "depth") == 0))
    generated = starts_with(outer, "name", DATA_LOADER_PREFIX) | starts_with(outer, "name", OPTIMIZER_PREFIX)
    return _annotated(where(outer, ~generated)) or _between_optimizer_steps(where(outer, generated))


def _annotated(outer: pa.Table) -> Iterations | None:
    """Iterations that are the outermost annotation repeated most, or the prefill and decode ones."""
    code, names = codes(outer, "name")
    counts, totals = np.bincount(code, minlength=len(names)), np.bincount(code, ints(outer, "dur_ns"), len(names))
    repeated = [c for c in np.flatnonzero(counts >= MIN_REPEATS).tolist()]
    if not repeated:
        return None
    phased = [c for c in repeated if _phase_of(names[c])]
    if {_phase_of(names[c]) for c in phased} == set(PHASE_NAMES):
        chosen = np.flatnonzero(np.isin(code, phased))
        source = ", ".join(sorted(names[c] for c in phased))
    else:
        top = max(repeated, key=lambda c: float(totals[c]))
        chosen, source = np.flatnonzero(code == top), names[top]
    picked = outer.take(pa.array(chosen, pa.int64()))
    return _sorted(source, picked, None)


def _between_optimizer_steps(outer: pa.Table) -> Iterations | None:
    """Iterations from the start of one ``Optimizer.step`` to the next's (n steps make n - 1)."""
    steps = where(outer, starts_with(outer, "name", OPTIMIZER_STEP_PREFIX))
    if steps.num_rows < MIN_REPEATS + 1:
        return None
    order = np.argsort(ints(steps, "ts_ns"), kind="stable")
    starts, ids = ints(steps, "ts_ns")[order], ints(steps, "id")[order]
    name = strings(steps, "name")[int(order[0])]
    source = f"{name} to the next"
    count = len(starts) - 1
    return Iterations(source, ids[:-1], starts[:-1], starts[1:], np.arange(count, dtype=np.int64), [name] * count)


def _step_number(name: str) -> int:
    digits = name[len(STEP_PREFIX) :].strip()
    return int(digits) if digits.isdigit() else -1


def _longest_per_number(numbers: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """The row of the longest ``ProfilerStep#N`` of each number N."""
    order = np.lexsort((-durations, numbers))
    first = np.concatenate([[True], numbers[order][1:] != numbers[order][:-1]])
    found: np.ndarray = order[first]
    return found


def _sorted(source: str, table: pa.Table, numbers: np.ndarray | None) -> Iterations:
    """``table``'s rows by start time; ``numbers`` None: each iteration's ordinal in that order."""
    starts = ints(table, "ts_ns")
    order = np.argsort(starts, kind="stable")
    names = strings(table, "name")
    return Iterations(
        source,
        ints(table, "id")[order],
        starts[order],
        (starts + ints(table, "dur_ns"))[order],
        np.arange(len(order), dtype=np.int64) if numbers is None else numbers[order],
        [names[i] for i in order.tolist()],
    )


def _phase_of(name: str) -> str:
    lowered = name.lower()
    return next((phase for phase in PHASE_NAMES if phase in lowered), "")


def phases(found: Iterations) -> list[Phase]:
    """The phases of a rank's iterations, each without its leading warm-up iterations."""
    by_name = [_phase_of(name) for name in found.names]
    if found.source != "ProfilerStep" and set(by_name) == set(PHASE_NAMES):
        groups = [(phase, np.flatnonzero(np.asarray(by_name) == phase), "by annotation name") for phase in PHASE_NAMES]
    else:
        groups = _clusters(found.dur_ns)
    return [_without_warmup(name, members, found, why) for name, members, why in groups]


def _clusters(durations: np.ndarray) -> list[tuple[str, np.ndarray, str]]:
    """One group of every iteration, or two (``long``, ``short``) when their times form two clusters
    apart by ``CLUSTER_RATIO`` or more, each of ``MIN_REPEATS`` or more, the long one not only the
    first iterations (those are warm-up)."""
    every = np.arange(len(durations))
    if len(durations) >= 2 * MIN_REPEATS and durations.min() > 0:
        order = np.argsort(durations, kind="stable")
        ratios = durations[order][1:] / durations[order][:-1]
        cut = int(np.argmax(ratios[MIN_REPEATS - 1 : len(order) - MIN_REPEATS])) + MIN_REPEATS - 1
        ratio = float(ratios[cut])
        long_ones = np.sort(order[cut + 1 :])
        leading = bool((long_ones == np.arange(len(long_ones))).all())
        if ratio >= CLUSTER_RATIO and not leading:
            why = f"two clusters of iteration time, {ratio:.1f}x apart (in a serving trace: prefill and decode)"
            return [("long", long_ones, why), ("short", np.sort(order[: cut + 1]), why)]
    return [("steady", every, "")]


def _without_warmup(name: str, members: np.ndarray, found: Iterations, why: str) -> Phase:
    durations = found.dur_ns[members]
    median = float(np.median(durations))
    slow = durations > WARMUP_FACTOR * median
    leading = int(np.argmin(slow)) if not slow.all() else 0  # leading run of slow iterations
    warmup, kept = members[:leading], members[leading:]
    if leading:
        numbers = ", ".join(str(n) for n in found.numbers[warmup].tolist())
        times = ", ".join(f"{d / median:.1f}x" for d in durations[:leading].tolist())
        dropped = f"warm-up {numbers} dropped ({times} the median {median / 1e6:.3f} ms)"
    else:
        dropped = f"no warm-up (no leading iteration over {WARMUP_FACTOR}x the median {median / 1e6:.3f} ms)"
    return Phase(name, kept, warmup, "; ".join(part for part in (why, dropped) if part))


def steady_state(tables: Tables) -> pa.Table:
    """Per rank and phase (``steady``; ``prefill`` and ``decode`` by annotation name, or ``long`` and
    ``short`` by iteration time), the steady-state window: its start and end, the iterations in it
    and the warm-up iterations left out, their median time, and why; ``example_id`` is its longest
    iteration."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        found = iterations(events)
        if found is None:
            continue
        for phase in phases(found):
            kept = phase.kept
            records.append(
                {
                    "run": run,
                    "rank": rank,
                    "phase": phase.name,
                    "source": found.source,
                    "start_ts_ns": int(found.start_ns[kept].min()),
                    "end_ts_ns": int(found.end_ns[kept].max()),
                    "steps": len(kept),
                    "first_step": int(found.numbers[kept[0]]),
                    "last_step": int(found.numbers[kept[-1]]),
                    "warmup_steps": len(phase.warmup),
                    "median_step_ns": int(np.median(found.dur_ns[kept])),
                    "reason": phase.reason,
                    "example_id": int(found.ids[kept[np.argmax(found.dur_ns[kept])]]),
                }
            )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("phase", pa.string()),
        ("source", pa.string()),
        ("start_ts_ns", pa.int64()),
        ("end_ts_ns", pa.int64()),
        ("steps", pa.int64()),
        ("first_step", pa.int64()),
        ("last_step", pa.int64()),
        ("warmup_steps", pa.int64()),
        ("median_step_ns", pa.int64()),
        ("reason", pa.string()),
        ("example_id", pa.int64()),
    ]
    return rows(schema, records)


def windows(tables: Tables) -> dict[RankKey, tuple[int, int]]:
    """(run, rank) -> the steady-state window (start, end ns) over all its phases."""
    found: dict[RankKey, tuple[int, int]] = {}
    if "events" not in tables:
        return found
    for row in steady_state(tables).to_pylist():
        key = (row["run"], row["rank"])
        start, end = found.get(key, (row["start_ts_ns"], row["end_ts_ns"]))
        found[key] = (min(start, row["start_ts_ns"]), max(end, row["end_ts_ns"]))
    return found
