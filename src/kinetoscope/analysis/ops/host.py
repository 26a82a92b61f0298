"""Host-side analyses: framework ops by self and total time, how busy the host threads were,
and the host CPU and memory samples."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import intervals
from kinetoscope.analysis._tables.column_arrays import code_view, ints, string_mask
from kinetoscope.analysis._tables.examples import EXAMPLE_FIELD, example_ids
from kinetoscope.analysis._tables.group_sums import group_sums, most_first
from kinetoscope.analysis._tables.id_lookup import id_positions
from kinetoscope.analysis._tables.masks import is_in, starts_with
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis._tables.result_tables import pct, rows
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.settings.options import DEFAULT_TOP, TopOptions
from kinetoscope.model import kinds, ops

# Rows that are host work themselves (Python frames and step markers only label it).
HOST_WORK = (kinds.OP, kinds.USER_ANNOTATION, kinds.RUNTIME_CALL, kinds.DRIVER)
STEP_PREFIX = kinds.STEP_PREFIX


def _folded(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(rows torch's ``key_averages`` folds into their parent, each row's self time with its folded repeats'
    added): the model's rule (``ops.repeats``) over the host rows of ``events``."""
    names = code_view(events, "name")[0]  # equal codes: equal names
    in_tree = is_in(events, "kind", kinds.OP_TREE_KINDS)
    # the parents handed over, not held here: they go once ``repeats`` has walked up the tree
    folded, keeper = ops.repeats(id_positions(events, ints(events, "parent_id")), names, in_tree)
    return folded, ops.folded_self_ns(ints(events, "self_ns"), folded, keeper)


def counted_ops(events: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """The op rows of one rank's ``events`` (its host rows: framework and runtime layers, for the runtime
    calls inside an op decide whether it folds) that ``key_averages`` counts, and their self time (ns)
    with that of the folded repeats added."""
    ops_rows, self_ns = _counted(events, (kinds.OP,))
    return where(events, ops_rows), self_ns[ops_rows]


def _counted(events: pa.Table, wanted: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(the rows of kinds ``wanted`` that ``key_averages`` counts, each row's self time with its folded
    repeats' added)."""
    folded, self_all = _folded(events)
    return is_in(events, "kind", wanted) & ~folded, self_all


def top_ops(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, the framework ops and annotations with the most self time, as torch's ``key_averages``
    lists them (``events.self_ns``: their own time, the ops, annotations and runtime calls inside them
    excluded, Python frames ignored); ``annotation`` marks ``record_function`` scopes and host
    collectives, each ``ProfilerStep#N`` counts as ``ProfilerStep*``; ``example_id`` is the call with
    the most self time. ``self_pct`` is of the ops' and annotations' self time together.

    As in torch's ``key_averages``, a row whose parent has its name and no other child counts once."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        ranked, self_all = _counted(events, kinds.RANKED_KINDS)
        self_ns = self_all[ranked]
        del self_all  # every row's: not held while the ranked rows are grouped
        for row in _ranked_rows(events, ranked, self_ns, options.top):
            records.append({"run": run, "rank": rank, **row})
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("name", pa.string()),
        ("annotation", pa.bool_()),
        ("calls", pa.int64()),
        ("total_ns", pa.int64()),
        ("self_ns", pa.int64()),
        ("self_pct", pa.float64()),
        EXAMPLE_FIELD,
    ]
    return rows(schema, records)


def _ranked_rows(events: pa.Table, ranked: np.ndarray, self_ns: np.ndarray, top: int) -> list[dict[str, Any]]:
    """The ``top`` rows of one rank's ``top_ops``: grouped by (key_averages name, annotation or not);
    ``self_ns``: the ``ranked`` rows' self time."""
    every_code, names = code_view(events, "name")
    index: dict[str, int] = {}
    key_code = np.asarray([index.setdefault(ops.averages_key(n), len(index)) for n in names], dtype=np.int64)
    if len(key_code) < 1 << 30:  # a key is twice a code and one more: in 32 bits, half the memory per ranked row
        key_code = key_code.astype(np.int32)
    key_names = list(index)
    annotation = is_in(events, "kind", kinds.ANNOTATION_KINDS)[ranked]
    code = key_code[every_code[ranked]]
    code *= 2  # in place: no temporaries of the ranked rows' size
    code += annotation
    groups = group_sums(code, [ints(events, "dur_ns")[ranked], self_ns])
    (total_ns, own_ns), whole = groups.sums, int(self_ns.sum())
    slots = len(key_names) * 2
    example = example_ids(code, self_ns, ints(events, "id")[ranked], slots)
    out = []
    for at in most_first(own_ns)[:top].tolist():
        group, own = int(groups.code[at]), int(own_ns[at])
        out.append(
            {
                "name": key_names[group // 2],
                "annotation": bool(group % 2),
                "calls": int(groups.rows[at]),
                "total_ns": int(total_ns[at]),
                "self_ns": own,
                "self_pct": pct(own, whole),
                "example_id": int(example[group]),
            }
        )
    return out


def host_busy_ns(events: pa.Table) -> int:
    """Time at least one host thread was inside an op, annotation or runtime call (steps excluded)."""
    work = is_in(events, "kind", HOST_WORK)
    work &= ~starts_with(events, "name", STEP_PREFIX)
    starts = ints(events, "ts_ns")[work]
    return intervals.length(starts, starts + ints(events, "dur_ns")[work])


def _series(counters: pa.Table, match: str) -> tuple[np.ndarray, np.ndarray]:
    """(ts_ns, value) of the counters whose name contains ``match`` (tested once per distinct name)."""
    picked = where(counters, string_mask(counters, "name", lambda names: pc.match_substring(names, match)))
    return ints(picked, "ts_ns"), picked.column("value").to_numpy()


def _per_time_mean(ts: np.ndarray, values: np.ndarray) -> np.ndarray:
    if not len(ts):
        return values
    unique, inverse = np.unique(ts, return_inverse=True)
    sums = np.zeros(len(unique))
    counts = np.zeros(len(unique))
    np.add.at(sums, inverse, values)
    np.add.at(counts, inverse, 1)
    return sums / counts


def host_samples(tables: Tables) -> pa.Table:
    """Per rank, host CPU utilisation (mean over CPUs; its mean and peak over time), the process's
    CPU use, and host and process memory (mean, peak)."""
    records = []
    for (run, rank), counters in per_rank(tables["counters"]):
        cpu = _per_time_mean(*_series(counters, "utilisation (%)"))
        _, proc = _series(counters, "process CPU")
        _, used = _series(counters, "host memory used")
        _, rss = _series(counters, "process resident memory")
        records.append(
            {
                "run": run,
                "rank": rank,
                "samples": len(cpu),
                "cpu_mean_pct": _stat(cpu, np.mean),
                "cpu_peak_pct": _stat(cpu, np.max),
                "process_cpu_mean_pct": _stat(proc, np.mean),
                "process_cpu_peak_pct": _stat(proc, np.max),
                "host_memory_mean_bytes": _stat(used, np.mean),
                "host_memory_peak_bytes": _stat(used, np.max),
                "process_memory_peak_bytes": _stat(rss, np.max),
            }
        )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("samples", pa.int64()),
        ("cpu_mean_pct", pa.float64()),
        ("cpu_peak_pct", pa.float64()),
        ("process_cpu_mean_pct", pa.float64()),
        ("process_cpu_peak_pct", pa.float64()),
        ("host_memory_mean_bytes", pa.float64()),
        ("host_memory_peak_bytes", pa.float64()),
        ("process_memory_peak_bytes", pa.float64()),
    ]
    return rows(schema, records)


def _stat(values: np.ndarray, fn: Callable[[np.ndarray], Any]) -> float | None:
    return round(float(fn(values)), 2) if len(values) else None
