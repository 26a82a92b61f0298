"""Device-side analyses: how device time splits between computation, communication, memory
operations and idle; which kernels dominate; how much communication overlaps computation.

Device work is every device row that occupies the device: kernels, memory copies and sets
(device annotations are labels, not work), by ``events.kind``. Its type:

* MEMORY: memory copies and sets;
* COMMUNICATION: kernels that belong to a collective (``events.collective``: the collective
  metadata Kineto attaches, else a NCCL/RCCL kernel name);
* COMPUTATION: every other kernel.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import intervals
from kinetoscope.analysis._tables.column_arrays import codes, ints, read_only
from kinetoscope.analysis._tables.examples import EXAMPLE_FIELD, example_ids
from kinetoscope.analysis._tables.group_sums import group_sums, most_first
from kinetoscope.analysis._tables.masks import is_in, not_empty, starts_with
from kinetoscope.analysis._tables.rank_slices import Tables, for_rows, per_rank
from kinetoscope.analysis._tables.result_tables import pct, rows
from kinetoscope.analysis._tables.selection import MEMORY_WORK, device_work_rows, where, without_args
from kinetoscope.analysis.collectives import user_communication
from kinetoscope.analysis.settings.options import DEFAULT_TOP, TopOptions
from kinetoscope.model import kinds

COMPUTATION, COMMUNICATION, MEMORY = "COMPUTATION", "COMMUNICATION", "MEMORY"
KERNEL_TYPES = (COMPUTATION, COMMUNICATION, MEMORY)


def device_work(events: pa.Table) -> pa.Table:
    """The rows of ``events`` that are device work (kernels, copies, sets)."""
    return device_work_rows(events)


def busy_ns(work: pa.Table) -> int:
    """The time at least one of ``device_work``'s rows ran (overlaps once); found once per table
    inside ``reuse.reusing()`` (the overview and the top kernels ask)."""
    return for_rows(work, "busy_ns", functools.partial(_busy_ns, work))


def _busy_ns(work: pa.Table) -> int:
    starts = ints(work, "ts_ns")
    return intervals.length(starts, starts + ints(work, "dur_ns"))


def kernel_types(work: pa.Table) -> np.ndarray:
    """0 computation, 1 communication, 2 memory, for each row of ``device_work``: communication is
    what the model decided at ingest (the ``collective`` column) and what the user's own
    ``communication`` patterns (``--categories``) match when the dataset is read
    (``user_communication.applied``)."""
    memory = is_in(work, "kind", MEMORY_WORK)
    communication = not_empty(user_communication.applied(work), "collective") & ~memory
    return np.where(memory, 2, np.where(communication, 1, 0))


def _typed_sets(work: pa.Table) -> list[tuple[np.ndarray, np.ndarray]]:
    """(starts, ends) of the computation, communication and memory work of ``device_work``; found
    once per table inside ``reuse.reusing()`` (the breakdowns and the overlap ask), read-only."""
    return for_rows(work, "typed_sets", functools.partial(_typed_sets_of, work))


def _typed_sets_of(work: pa.Table) -> list[tuple[np.ndarray, np.ndarray]]:
    starts = ints(work, "ts_ns")
    ends = starts + ints(work, "dur_ns")
    types = kernel_types(work)
    return [(read_only(starts[types == t]), read_only(ends[types == t])) for t in range(len(KERNEL_TYPES))]


def temporal_breakdown(tables: Tables) -> pa.Table:
    """Per rank, the device's time from its first to its last work: computation, then
    communication not hidden by computation, then memory operations hidden by neither, and idle."""
    records = []
    for (run, rank), events in per_rank(device_work(tables["events"])):
        comp, comm, mem = _typed_sets(events)
        starts, ends = np.concatenate([comp[0], comm[0], mem[0]]), np.concatenate([comp[1], comm[1], mem[1]])
        span = int(ends.max() - starts.min()) if len(starts) else 0
        busy = intervals.length(starts, ends)
        compute = intervals.length(*comp)
        with_comm = intervals.length(np.concatenate([comp[0], comm[0]]), np.concatenate([comp[1], comm[1]]))
        records.append(
            {
                "run": run,
                "rank": rank,
                "span_ns": span,
                "compute_ns": compute,
                "communication_ns": with_comm - compute,
                "memory_ns": busy - with_comm,
                "idle_ns": span - busy,
                "compute_pct": pct(compute, span),
                "non_compute_pct": pct(busy - compute, span),
                "idle_pct": pct(span - busy, span),
            }
        )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("span_ns", pa.int64()),
        ("compute_ns", pa.int64()),
        ("communication_ns", pa.int64()),
        ("memory_ns", pa.int64()),
        ("idle_ns", pa.int64()),
        ("compute_pct", pa.float64()),
        ("non_compute_pct", pa.float64()),
        ("idle_pct", pa.float64()),
    ]
    return rows(schema, records)


def _label(state: int) -> str:
    return " overlapping ".join(name for bit, name in enumerate(KERNEL_TYPES) if state & (1 << bit))


def kernel_type_breakdown(tables: Tables) -> pa.Table:
    """Per rank and for all ranks together (rank -1): time with each combination of work types running."""
    return with_all_ranks(kernel_types_per_rank(tables))


KERNEL_TYPE_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("kernel_type", pa.string()),
    ("time_ns", pa.int64()),
    ("pct", pa.float64()),
]


def kernel_types_per_rank(tables: Tables) -> pa.Table:
    """The rows of ``kernel_type_breakdown`` of each rank (none of rank -1)."""
    records = []
    for (run, rank), events in per_rank(device_work(tables["events"])):
        states = intervals.sweep(_typed_sets(events))
        whole = sum(states.values())
        for state, time_ns in sorted(states.items(), key=lambda kv: -kv[1]):
            records.append(
                {"run": run, "rank": rank, "kernel_type": _label(state), "time_ns": time_ns, "pct": pct(time_ns, whole)}
            )
    return rows(KERNEL_TYPE_SCHEMA, records)


def kernel_types_of_ranks(_run_tables: Tables, rows: dict[str, pa.Table]) -> pa.Table:
    """``kernel_type_breakdown`` from its ranks' rows (``kernel_types_per_rank``, a summary rank by rank)."""
    return with_all_ranks(rows["kernel_type_breakdown"])


def with_all_ranks(per_rank_rows: pa.Table) -> pa.Table:
    """``per_rank_rows`` (``kernel_types_per_rank``, ranks in order) and after them each run's rows
    for all its ranks together (rank -1): each work type's time summed over the ranks."""
    records = per_rank_rows.to_pylist()
    totals: dict[tuple[str, str], int] = {}
    for record in records:
        key = (str(record["run"]), str(record["kernel_type"]))
        totals[key] = totals.get(key, 0) + int(record["time_ns"])
    for run in sorted({run for run, _ in totals}):
        whole = sum(v for (r, _), v in totals.items() if r == run)
        for (r, label), time_ns in sorted(totals.items(), key=lambda kv: -kv[1]):
            if r == run:
                records.append(
                    {"run": run, "rank": -1, "kernel_type": label, "time_ns": time_ns, "pct": pct(time_ns, whole)}
                )
    return rows(KERNEL_TYPE_SCHEMA, records)


def _host_sets(events: pa.Table) -> list[tuple[np.ndarray, np.ndarray]]:
    """[computation, communication] intervals of a rank with no device work (a CPU-only job):
    host collectives (``gloo:all_reduce``, on the runtime layer) against the framework ops of the
    threads that do not run collectives (each set is merged, so nested ops count once)."""
    host = ints(events, "device") < 0
    comm = host & not_empty(events, "collective") & is_in(events, "layer", ("runtime",))
    comm_threads = np.unique(ints(events, "tid")[comm])
    comp = host & is_in(events, "kind", (kinds.OP,))
    comp &= ~np.isin(ints(events, "tid"), comm_threads) & ~not_empty(events, "collective")
    comp &= ~starts_with(events, "name", "c10d::")  # the process group's own calls issue or wait, not compute
    starts, ends = ints(events, "ts_ns"), ints(events, "ts_ns") + ints(events, "dur_ns")
    return [(starts[comp], ends[comp]), (starts[comm], ends[comm])]


def _overlap_sets(events: pa.Table) -> list[tuple[np.ndarray, np.ndarray]]:
    """[computation, communication] of one rank: on its device when it has device work, else on the host."""
    work = device_work(without_args(events))  # the rules' rows have args; these sets read none
    if work.num_rows:
        return _typed_sets(work)[:2]
    return _host_sets(events)


def _overlap_states(events: pa.Table) -> dict[int, int] | None:
    """``intervals.sweep`` of the rank's computation and communication (None: neither)."""
    comp, comm = _overlap_sets(events)
    if not len(comp[0]) and not len(comm[0]):
        return None
    return intervals.sweep([comp, comm])


def communication_overlap(tables: Tables) -> pa.Table:
    """Per rank, communication time and how much of it runs while computation runs: device
    collectives against device computation, or, on a rank without device work (CPU-only),
    host collectives against the framework ops of the other threads."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        states = for_rows(events, "overlap_states", functools.partial(_overlap_states, events))  # the rule asks too
        if states is None:
            continue
        comm_ns = states.get(2, 0) + states.get(3, 0)
        records.append(
            {
                "run": run,
                "rank": rank,
                "communication_ns": comm_ns,
                "overlap_ns": states.get(3, 0),
                "overlap_pct": pct(states.get(3, 0), comm_ns),
            }
        )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("communication_ns", pa.int64()),
        ("overlap_ns", pa.int64()),
        ("overlap_pct", pa.float64()),
    ]
    return rows(schema, records)


def top_kernels(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, the device work (kernels, and memory copies and sets marked by their kind) with the
    most device time; ``pct_of_busy`` is its share of the time the device was busy with any work;
    ``example_id`` is its longest run."""
    records = []
    for (run, rank), work in per_rank(device_work(tables["events"])):
        durations = ints(work, "dur_ns")
        busy = busy_ns(work)
        code, names = codes(work, "name")
        groups = group_sums(code, [durations])
        example = example_ids(code, durations, ints(work, "id"), len(names))
        chosen = most_first(groups.sums[0])[: options.top]
        first = groups.first[chosen]  # a name's kind and type are those of its first row
        kind_names = [str(kind) for kind in work.column("kind").take(pa.array(first)).to_pylist()]
        types = kernel_types(work)[first].tolist()
        for at, kind, type_code in zip(chosen.tolist(), kind_names, types, strict=True):
            calls, total = int(groups.rows[at]), int(groups.sums[0][at])
            records.append(
                {
                    "run": run,
                    "rank": rank,
                    "name": names[groups.code[at]],
                    "kind": kind,
                    "type": KERNEL_TYPES[type_code],
                    "calls": calls,
                    "total_ns": total,
                    "mean_ns": total // max(calls, 1),
                    "pct_of_busy": pct(total, busy),
                    "example_id": int(example[groups.code[at]]),
                }
            )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("name", pa.string()),
        ("kind", pa.string()),
        ("type", pa.string()),
        ("calls", pa.int64()),
        ("total_ns", pa.int64()),
        ("mean_ns", pa.int64()),
        ("pct_of_busy", pa.float64()),
        EXAMPLE_FIELD,
    ]
    return rows(schema, records)


def memory_operations(tables: Tables) -> pa.Table:
    """Per rank, memory copies and sets by kind (``Memcpy HtoD``, ``Memset``, ...): calls, time and
    the longest one (``example_id``)."""
    records = []
    for (run, rank), events in per_rank(where(tables["events"], is_in(tables["events"], "kind", MEMORY_WORK))):
        code, names = codes(events, "name")
        labels = [_memory_kind(name) for name in names]  # once per distinct name
        kinds = list(dict.fromkeys(labels))
        label_of = np.asarray([kinds.index(label) for label in labels], dtype=np.int64)
        groups = group_sums(label_of[code], [ints(events, "dur_ns")])
        example = example_ids(label_of[code], ints(events, "dur_ns"), ints(events, "id"), len(kinds))
        for at in most_first(groups.sums[0]).tolist():
            total, calls = int(groups.sums[0][at]), int(groups.rows[at])
            records.append(
                {"run": run, "rank": rank, "kind": kinds[groups.code[at]], "calls": calls, "total_ns": total,
                 "example_id": int(example[groups.code[at]])}
            )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("kind", pa.string()),
        ("calls", pa.int64()),
        ("total_ns", pa.int64()),
        EXAMPLE_FIELD,
    ]
    return rows(schema, records)


def _memory_kind(name: str) -> str:
    if name.startswith("Memcpy"):
        return name[:11]
    return "Memset" if name.startswith("Memset") else name.split(" (", maxsplit=1)[0]
