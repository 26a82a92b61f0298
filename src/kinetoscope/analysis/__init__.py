"""The analyses: pure functions from dataset tables (Arrow) to result tables, listed once.

Every analysis is ``fn(tables) -> pyarrow.Table``, or ``fn(tables, options)`` where it takes
options (a frozen dataclass of ``analysis/settings/options.py``, named by ``Analysis.options``); ``tables``
maps table names (``events``, ``counters``, ...) to Arrow tables. The CLI's ``summary`` and the
viewer list and call the analyses from ``ANALYSES``; each declares the tables and columns it
reads so callers load only those.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import codes, ints
from kinetoscope.analysis._tables.rank_slices import RankKey, Tables, same_rows
from kinetoscope.analysis._tables.selection import launched_outside, where
from kinetoscope.analysis.collectives import distributed
from kinetoscope.analysis.collectives.clock_alignment import clock_offsets
from kinetoscope.analysis.device import device_time
from kinetoscope.analysis.memory import memory_peaks
from kinetoscope.analysis.ops import attribution, host
from kinetoscope.analysis.prepare import prepared
from kinetoscope.analysis.roofline import roofline
from kinetoscope.analysis.settings.options import AnalysisOptions, IdleOptions, TopOptions
from kinetoscope.analysis.time import overview, steady_state, steps

AnalysisFn = Callable[..., pa.Table]

EVENT_COLUMNS = (
    "run",
    "rank",
    "id",
    "layer",
    "name",
    "category",
    "kind",
    "ts_ns",
    "dur_ns",
    "tid",
    "device",
    "collective",
    "depth",
    "parent_id",
    "op_id",
    "launch_id",
    "correlation",
    "self_ns",
    "step",
)
COUNTER_COLUMNS = ("run", "rank", "name", "ts_ns", "value", "unit", "device")
_COLUMNS: dict[str, tuple[str, ...] | None] = {"events": EVENT_COLUMNS, "counters": COUNTER_COLUMNS}


CombineFn = Callable[[Tables, dict[str, pa.Table]], pa.Table]


class _Deferred:
    """An analysis function named by its module (under ``kinetoscope.analysis``) and name, imported
    where it is first called or described: the one screen makes six analyses, and the modules of
    those that neither it nor the findings read (CUDA graphs, launches, idle time, recomputation)
    cost their import (their dataclasses and patterns) to every summary."""

    __slots__ = ("_fn", "module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self._fn: AnalysisFn | None = None

    def __repr__(self) -> str:
        return f"<analysis function {self.module}.{self.name}>"

    def resolved(self) -> AnalysisFn:
        """The function itself, its module imported the first time."""
        if self._fn is None:
            self._fn = getattr(importlib.import_module(f"{__name__}.{self.module}"), self.name)
        return self._fn

    def __call__(self, *args: Any, **kwargs: Any) -> pa.Table:
        return self.resolved()(*args, **kwargs)


@dataclass(frozen=True)
class Shares:
    """How a summary made rank by rank (``per_rank.py``) makes an analysis from the ranks' shares.
    By default a rank analysis is its ranks' rows one after another, and an across-ranks one is
    computed over the events every rank keeps for them (``per_rank.run_rows``). Otherwise
    ``rank_fn`` gives a rank's rows (None: the analysis itself) and ``combine(run_tables, rows)``
    the whole result, from those tables and each rank analysis of ``reads`` (and this one, when
    of rank scope) with its ranks' rows one after another."""

    rank_fn: AnalysisFn | None = None
    combine: CombineFn | None = None
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Analysis:
    """One analysis: ``scope`` is ``rank`` (a row or rows per rank) or ``run`` (across ranks)."""

    name: str
    title: str
    scope: str
    tables: tuple[str, ...]
    fn: AnalysisFn
    extra_columns: tuple[str, ...] = ()  # events columns read beyond EVENT_COLUMNS (``args`` is large)
    options: type[AnalysisOptions] | None = None  # the options class ``fn`` takes (None: none)
    shares: Shares = Shares()  # how it is made from the ranks' shares, rank by rank
    # Reads the tables before a steady-state window cut them (it is the analysis that finds the window).
    windowless: bool = False

    @property
    def description(self) -> str:
        fn = self.fn.resolved() if isinstance(self.fn, _Deferred) else self.fn
        return (fn.__doc__ or "").strip()

    def __call__(self, tables: Tables, options: AnalysisOptions | None = None) -> pa.Table:
        """The analysis's table; ``options`` must be of its own options class (None: its defaults)."""
        tables = self._visible(tables)
        if self.options is None:
            if options is not None:
                raise TypeError(f"analysis {self.name} takes no options")
            return self.fn(tables)
        if options is not None and not isinstance(options, self.options):
            raise TypeError(f"analysis {self.name} takes {self.options.__name__}, not {type(options).__name__}")
        return self.fn(tables, options if options is not None else self.options())

    def _visible(self, tables: Tables) -> Tables:
        """``tables`` without the events' ``args`` unless this analysis reads them (zero-copy), so the
        rows it filters and gathers do not carry the largest column."""
        events = tables.get("events")
        if events is None or "args" in self.extra_columns or "args" not in events.column_names:
            return tables
        view = reuse.cached(events, "without_args", lambda: same_rows(events.drop_columns(["args"]), events))
        return {**tables, "events": view}

    def pick(self, given: Iterable[AnalysisOptions]) -> AnalysisOptions | None:
        """The first of ``given`` of this analysis's options class (None: use its defaults)."""
        return next((o for o in given if self.options is not None and isinstance(o, self.options)), None)


_ALL_TABLES = ("events", "counters", "sessions", "warnings", "allocations")

ANALYSES: tuple[Analysis, ...] = (
    Analysis("overview", "Per rank", "rank", _ALL_TABLES, overview.rank_overview),
    Analysis("top_ops", "Top framework ops by self time", "rank", ("events",), host.top_ops, options=TopOptions),
    Analysis("top_kernels", "Top device kernels", "rank", ("events",), device_time.top_kernels, options=TopOptions),
    Analysis("memory_operations", "Memory copies and sets", "rank", ("events",), device_time.memory_operations),
    Analysis(
        "temporal_breakdown",
        "Device time: compute, communication, memory, idle",
        "rank",
        ("events",),
        device_time.temporal_breakdown,
    ),
    Analysis(
        "kernel_type_breakdown",
        "Device time by kernel type",
        "rank",
        ("events",),
        device_time.kernel_type_breakdown,
        shares=Shares(device_time.kernel_types_per_rank, device_time.kernel_types_of_ranks),
    ),
    Analysis(
        "communication_overlap",
        "Communication overlapped by computation",
        "rank",
        ("events",),
        device_time.communication_overlap,
    ),
    Analysis(
        "gpu_time_by_op",
        "Device time by launching op",
        "rank",
        ("events",),
        attribution.gpu_time_by_op,
        options=TopOptions,
    ),
    Analysis(
        "gpu_time_by_shape",
        "Device time by launching op and input shape",
        "rank",
        ("events",),
        attribution.gpu_time_by_shape,
        ("args",),
        options=TopOptions,
    ),
    Analysis(
        "gpu_time_by_top_op",
        "Device time by outermost op or annotation",
        "rank",
        ("events",),
        attribution.gpu_time_by_top_op,
        options=TopOptions,
    ),
    Analysis(
        "gpu_time_by_module",
        "Device time by nn.Module",
        "rank",
        ("events",),
        attribution.gpu_time_by_module,
        options=TopOptions,
    ),
    Analysis("time_by_category", "Device and op time by category", "rank", ("events",), attribution.time_by_category),
    Analysis(
        "op_roofline",
        "Achieved FLOP/s and bytes/s per op and shape, against the roofline",
        "rank",
        ("events", "sessions"),
        roofline.op_roofline,
        ("args",),
        options=TopOptions,
    ),
    Analysis(
        "roofline_devices", "Device peaks the roofline uses", "rank", ("events", "sessions"), roofline.roofline_devices
    ),
    Analysis(
        "activation_recomputation",
        "Forward ops recomputed in backward (activation checkpointing)",
        "rank",
        ("events",),
        _Deferred("ops.recompute", "activation_recomputation"),
        ("args",),
        options=TopOptions,
    ),
    Analysis(
        "cuda_graph_replays",
        "CUDA/HIP graph replays",
        "rank",
        ("events",),
        _Deferred("graphs.cuda_graphs", "cuda_graph_replays"),
        ("args", "stream"),
    ),
    Analysis(
        "cuda_graph_capture_ops",
        "CUDA/HIP graph replays by the op that captured them",
        "rank",
        ("events", "frames"),
        _Deferred("graphs.cuda_graphs", "cuda_graph_capture_ops"),
        ("args", "stack_id", "stream"),
        options=TopOptions,
    ),
    Analysis(
        "cuda_graph_unmatched",
        "CUDA/HIP graph replays not matched to a capture",
        "rank",
        ("events",),
        _Deferred("graphs.cuda_graphs", "cuda_graph_unmatched"),
        ("args", "stream"),
    ),
    Analysis("host_samples", "Host CPU and memory samples", "rank", ("counters",), host.host_samples),
    Analysis("device_memory", "Memory peaks", "rank", ("counters",), memory_peaks.device_memory),
    Analysis(
        "allocation_peaks",
        "Allocation peak (memory snapshots)",
        "rank",
        ("allocations",),
        memory_peaks.allocation_peaks,
    ),
    Analysis(
        "top_allocation_stacks",
        "Top allocating stacks",
        "rank",
        ("allocations", "frames"),
        memory_peaks.top_allocation_stacks,
        options=TopOptions,
    ),
    Analysis(
        "idle_time",
        "Device idle time by cause: host wait, launch latency, sync, other",
        "rank",
        ("events",),
        _Deferred("device.idle", "idle_time"),
        ("stream",),
        options=IdleOptions,
    ),
    Analysis(
        "idle_gaps",
        "Device idle gaps by size",
        "rank",
        ("events",),
        _Deferred("device.idle", "idle_gaps"),
        ("stream",),
        options=IdleOptions,
    ),
    Analysis(
        "kernel_launches",
        "Launch delay and short kernels",
        "rank",
        ("events",),
        _Deferred("device.launches", "kernel_launches"),
        ("stream",),
        options=IdleOptions,
    ),
    Analysis(
        "queue_lengths",
        "Ops queued per stream",
        "rank",
        ("events",),
        _Deferred("device.launches", "queue_lengths"),
        ("stream",),
    ),
    Analysis(
        "steady_state",
        "Steady-state window (warm-up left out; serving phases)",
        "rank",
        ("events",),
        steady_state.steady_state,
        windowless=True,
    ),
    Analysis("step_times", "Step time across ranks", "run", ("events",), steps.step_times),
    Analysis(
        "stragglers",
        "Straggler",
        "run",
        ("events",),
        steps.stragglers,
        shares=Shares(combine=steps.stragglers_of_ranks, reads=("communication_overlap",)),
    ),
    Analysis(
        "matched_collectives",
        "Collectives matched across ranks",
        "run",
        ("events", "sessions"),
        distributed.matched_collectives,
        ("args",),
        options=TopOptions,
    ),
    Analysis(
        "collective_arrivals",
        "Each rank's arrival at the collectives that cost most waiting",
        "run",
        ("events", "sessions"),
        distributed.collective_arrivals,
        ("args",),
        options=TopOptions,
    ),
    Analysis(
        "collective_waits",
        "Time each rank waits in collectives for the others",
        "run",
        ("events", "sessions"),
        distributed.collective_waits,
        ("args",),
    ),
    Analysis(
        "clock_offsets",
        "Clock offsets between hosts, from collective ends",
        "run",
        ("events", "sessions"),
        clock_offsets,
        ("args",),
    ),
)
ANALYSES_BY_NAME = {analysis.name: analysis for analysis in ANALYSES}


def needed_columns(analyses: tuple[Analysis, ...] = ANALYSES) -> dict[str, tuple[str, ...] | None]:
    """Table name -> the columns ``analyses`` read (None: all), to load no more than needed."""
    tables = {table for analysis in analyses for table in analysis.tables}
    needed = {table: _COLUMNS.get(table) for table in sorted(tables)}
    extra = [column for analysis in analyses for column in analysis.extra_columns]
    base = needed.get("events")
    if base is not None and extra:
        needed["events"] = (*base, *dict.fromkeys(c for c in extra if c not in base))
    return needed


def launched_in_window(tables: Tables) -> dict[str, pa.Table]:
    """``tables`` without the device work launched before the trace began (HTA's and TraceLens's default)."""
    events = tables["events"]
    return {**tables, "events": where(events, ~launched_outside(events))}


def in_steady_state(tables: Tables) -> dict[str, pa.Table]:
    """``tables`` cut to each rank's steady-state window (``steady_state.windows``): the events and counters
    that start inside it; a rank with no iterations keeps all its rows. The other tables are kept."""
    found = steady_state.windows(tables)
    return {name: _cut(table, found) if name in _TIMED else table for name, table in tables.items()}


_TIMED = ("events", "counters")


def _cut(table: pa.Table, found: dict[RankKey, tuple[int, int]]) -> pa.Table:
    """The rows of ``table`` that start inside their rank's window (ranks without one: all)."""
    if not found or "ts_ns" not in table.column_names or "rank" not in table.column_names:
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    ranks, ts = ints(table, "rank"), ints(table, "ts_ns")
    run_codes, run_names = codes(table, "run")
    for (run, rank), (start, end) in found.items():
        if run not in run_names:
            continue
        mine = (run_codes == run_names.index(run)) & (ranks == rank)
        keep &= ~mine | ((ts >= start) & (ts <= end))
    return where(table, keep)


def run_all(
    tables: Tables, options: Iterable[AnalysisOptions] = (), *, analyses: tuple[Analysis, ...] = ANALYSES
) -> dict[str, pa.Table]:
    """Every analysis's result, by name; each takes the one of ``options`` of its own class, if any."""
    given, ready = tuple(options), prepared(tables)
    return {analysis.name: analysis(ready, analysis.pick(given)) for analysis in analyses}


__all__ = [
    "ANALYSES",
    "ANALYSES_BY_NAME",
    "COUNTER_COLUMNS",
    "EVENT_COLUMNS",
    "Analysis",
    "AnalysisOptions",
    "IdleOptions",
    "Shares",
    "TopOptions",
    "in_steady_state",
    "needed_columns",
    "prepared",
    "run_all",
]
