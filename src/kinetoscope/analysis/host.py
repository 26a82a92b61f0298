"""Host-side analyses: framework ops by self and total time, how busy the host threads were,
and the host CPU and memory samples."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis import intervals
from kinetoscope.analysis.examples import EXAMPLE_FIELD, example_ids
from kinetoscope.analysis.frames import (
    Tables,
    codes,
    group_sums,
    id_positions,
    ints,
    is_in,
    most_first,
    pct,
    per_rank,
    rows,
    starts_with,
    where,
)
from kinetoscope.analysis.options import DEFAULT_TOP, TopOptions
from kinetoscope.model import kinds

# Rows that are host work themselves (Python frames and step markers only label it).
HOST_WORK = (kinds.OP, kinds.USER_ANNOTATION, kinds.RUNTIME_CALL, kinds.DRIVER)
STEP_PREFIX = "ProfilerStep#"


def _collapse_repeats(events: pa.Table, self_ns: np.ndarray) -> np.ndarray:
    """Ops torch's ``key_averages`` folds into their parent: an op that is the only op child of an op
    of the same name (``aten::sum`` calling ``aten::sum``, Python frames between them or not). Their
    self time moves to the kept ancestor."""
    names = codes(events, "name")[0]  # equal codes: equal names
    op = is_in(events, "kind", (kinds.OP,))
    up = id_positions(events, ints(events, "op_id"))
    child = np.flatnonzero(op & (up >= 0))  # ops inside an op, and that op's row
    parent = up[child]
    only = np.bincount(parent, minlength=events.num_rows)[parent] == 1
    rows = child[(names[parent] == names[child]) & only & op[parent]]
    folded = np.zeros(events.num_rows, dtype=bool)
    folded[rows] = True
    top = up[rows]  # each folded row's nearest kept ancestor: up through the folded ones, all rows at once
    while len(climbing := np.flatnonzero(folded[top])):
        top[climbing] = up[top[climbing]]
    np.add.at(self_ns, top, self_ns[rows])  # a folded row is nobody's kept ancestor: its own time only
    return folded


def counted_ops(events: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """The op rows of one rank's ``events`` that ``key_averages`` counts, and their self time (ns)
    with that of the folded repeats added."""
    ops, self_ns = _counted(events)
    return where(events, ops), self_ns[ops]


def _counted(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(the rows ``counted_ops`` keeps, each row's self time with its folded repeats' added)."""
    self_all = ints(events, "self_ns").copy()
    ops = is_in(events, "kind", (kinds.OP,)) & ~_collapse_repeats(events, self_all)
    return ops, self_all


def top_ops(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, the framework ops with the most self time (``events.self_ns``: their own time, the
    ops, annotations and runtime calls inside them excluded, Python frames ignored);
    ``example_id`` is the call with the most self time.

    As in torch's ``key_averages``, an op whose only child is an op of the same name counts once."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):  # ops are framework rows: no filter of the table first
        ops, self_all = _counted(events)  # columns of the kept rows read as numpy: no table filtered
        self_ns = self_all[ops]
        every_code, names = codes(events, "name")
        code = every_code[ops]
        groups = group_sums(code, [ints(events, "dur_ns")[ops], self_ns])
        (total_ns, own_ns), whole = groups.sums, int(self_ns.sum())
        example = example_ids(code, self_ns, ints(events, "id")[ops], len(names))
        for at in most_first(own_ns)[: options.top].tolist():
            own = int(own_ns[at])
            records.append(
                {
                    "run": run,
                    "rank": rank,
                    "name": names[groups.code[at]],
                    "calls": int(groups.rows[at]),
                    "total_ns": int(total_ns[at]),
                    "self_ns": own,
                    "self_pct": pct(own, whole),
                    "example_id": int(example[groups.code[at]]),
                }
            )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("name", pa.string()),
        ("calls", pa.int64()),
        ("total_ns", pa.int64()),
        ("self_ns", pa.int64()),
        ("self_pct", pa.float64()),
        EXAMPLE_FIELD,
    ]
    return rows(schema, records)


def host_busy_ns(events: pa.Table) -> int:
    """Time at least one host thread was inside an op, annotation or runtime call (steps excluded)."""
    work = is_in(events, "kind", HOST_WORK)
    work &= ~starts_with(events, "name", STEP_PREFIX)
    starts = ints(events, "ts_ns")[work]
    return intervals.length(starts, starts + ints(events, "dur_ns")[work])


def _series(counters: pa.Table, match: str) -> tuple[np.ndarray, np.ndarray]:
    """(ts_ns, value) of the counters whose name contains ``match``."""
    names = counters.column("name").cast(pa.string())
    picked = where(counters, np.asarray(pc.match_substring(names, match).to_numpy(zero_copy_only=False), bool))
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
