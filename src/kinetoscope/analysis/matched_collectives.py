"""Collectives matched across ranks: each instance of a collective found on every rank that ran it.

An instance is identified by its process group, its collective and its sequence number (Kineto's
``Seq`` metadata); where a rank's rows lack ``Seq`` (every public trace, and torch's CPU/gloo
traces), by its position among that rank's rows of the same group and collective
(``matched_by`` says which). A rank's row of an instance is its collective kernel, or on a rank
without collective kernels (CPU, gloo) its host collective (``gloo:all_reduce``).

Per instance: the latency is the shortest duration over its ranks (the rank that arrived last
waited least: its duration is the collective's own time); each rank waited its duration minus
that; its arrival skew is its start minus the earliest start. Bandwidths follow nccl-tests
(``doc/PERFORMANCE.md``): ``algbw = S / latency`` with ``S`` the larger of the in and out
messages in bytes, and ``busbw = algbw x`` 2(n-1)/n for allreduce, (n-1)/n for allgather,
reducescatter and alltoall, 1 for broadcast, reduce, send, recv and sendrecv.

Arrival skews compare clocks of different hosts: ``matched`` takes each rank's clock offset
(``clock_alignment``) off its starts. Durations, and so waits, need no common clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kinetoscope.analysis.frames import codes, ints, is_in, not_empty, per_rank
from kinetoscope.model import collectives as model_collectives
from kinetoscope.model import kinds

# Bytes per element of the ``dtype`` Kineto records (c10 ScalarType names).
DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
    "Byte": 1, "Bool": 1, "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16, "UInt16": 2,
    "UInt32": 4, "UInt64": 8, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1,
    "Float8_e5m2fnuz": 1, "Float8_e8m0fnu": 1, "QInt8": 1, "QUInt8": 1, "QInt32": 4,
}  # fmt: skip
NO_VALUE = -1


def bus_factor(collective: str, ranks: int) -> float | None:
    """nccl-tests' bus bandwidth factor of ``collective`` over ``ranks`` (None: no formula)."""
    if ranks < 1:
        return None
    if collective == "allreduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (ranks - 1) / ranks
    if collective in ("broadcast", "reduce", "send", "recv", "sendrecv"):
        return 1.0
    return None


@dataclass(frozen=True)
class Meta:
    """The collective metadata of one row's args (``NO_VALUE`` / "" where absent)."""

    group: str = ""
    seq: int = NO_VALUE
    size_bytes: int = NO_VALUE
    group_size: int = NO_VALUE


def _int(value: object) -> int:
    if isinstance(value, bool):
        return NO_VALUE
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return NO_VALUE


def read_meta(text: str | None) -> Meta:
    """The metadata Kineto copies from ``record_param_comms`` onto a collective's rows."""
    if not text or ("Collective name" not in text and "Seq" not in text):
        return Meta()
    try:
        args = json.loads(text)
    except ValueError:
        return Meta()
    if not isinstance(args, dict):
        return Meta()
    group = args.get("Process Group Name", args.get("Process Group ID", ""))
    nelems = max(_int(args.get("In msg nelems")), _int(args.get("Out msg nelems")))
    element = DTYPE_BYTES.get(str(args.get("dtype", "")), NO_VALUE)
    size = nelems * element if nelems >= 0 and element > 0 else NO_VALUE
    return Meta(str(group), _int(args.get("Seq")), size, _int(args.get("Group size")))


def collective_rows(events: pa.Table) -> np.ndarray:
    """Positions of each rank's collectives: its collective kernels, or on a rank with none of
    them its host collectives."""
    kernels = is_in(events, "kind", (kinds.KERNEL,)) & not_empty(events, "collective")
    host = is_in(events, "kind", (kinds.COLLECTIVE,))
    rank_key = _rank_key(events)
    with_kernels = np.isin(rank_key, np.unique(rank_key[kernels]))
    found: np.ndarray = np.flatnonzero(kernels | (host & ~with_kernels))
    return found


def _rank_key(table: pa.Table) -> np.ndarray:
    run_code, _ = codes(table, "run")
    key: np.ndarray = run_code.astype(np.int64) << 32 | (ints(table, "rank").astype(np.int64) & 0xFFFFFFFF)
    return key


ARRIVAL_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("instance", pa.int64()),
    ("group", pa.string()),
    ("collective", pa.string()),
    ("number", pa.int64()),
    ("matched_by", pa.string()),
    ("event_id", pa.int64()),
    ("ts_ns", pa.int64()),
    ("dur_ns", pa.int64()),
    ("size_bytes", pa.int64()),
    ("group_size", pa.int32()),
]


def arrivals(events: pa.Table) -> pa.Table:
    """One row per rank of each matched instance, in time order: the instance's number, its group,
    collective, number (its ``Seq``, or when matched by order its place among the rank's rows of
    that group and collective), how it was matched, and that rank's row."""
    picked = events.take(pa.array(collective_rows(events), pa.int64()))
    texts = picked.column("args").to_pylist() if "args" in picked.column_names else [None] * picked.num_rows
    metas = [read_meta(text) for text in texts]  # collective rows only: few beside the events
    run_code, runs = codes(picked, "run")
    canonical = _canonical_names(picked)
    groups = np.asarray([m.group for m in metas], dtype=object)
    seq = np.asarray([m.seq for m in metas], dtype=np.int64)
    combo = _codes_of(run_code.astype(str).astype(object) + "\0" + groups + "\0" + canonical)
    by_seq = np.ones(combo.max() + 1 if len(combo) else 0, dtype=bool)
    np.logical_and.at(by_seq, combo, seq >= 0)
    rank_key, ts = _rank_key(picked), ints(picked, "ts_ns")
    key = np.where(by_seq[combo], seq, _position(combo, rank_key, ts))
    instance = _codes_of(combo.astype(str).astype(object) + "\0" + key.astype(str).astype(object))
    out = {
        "run": [runs[c] for c in run_code.tolist()],
        "rank": ints(picked, "rank"),
        "instance": instance,
        "group": groups,
        "collective": canonical,
        "number": key,
        "matched_by": np.where(by_seq[combo], "seq", "order"),
        "event_id": ints(picked, "id"),
        "ts_ns": ts,
        "dur_ns": ints(picked, "dur_ns"),
        "size_bytes": np.asarray([m.size_bytes for m in metas], dtype=np.int64),
        "group_size": np.asarray([m.group_size for m in metas], dtype=np.int32),
    }
    table = pa.table({name: pa.array(out[name], kind) for name, kind in ARRIVAL_SCHEMA})
    return table.take(pa.array(np.lexsort((ints(table, "rank"), ts)), pa.int64()))


def _canonical_names(picked: pa.Table) -> np.ndarray:
    """Each row's collective in one spelling; where its ``collective`` is empty, the one its name spells."""
    name_code, names = codes(picked, "collective")
    event_code, event_names = codes(picked, "name")
    spelled = np.asarray([model_collectives.spelled(n) for n in event_names], dtype=object)[event_code]
    given = np.asarray(names, dtype=object)[name_code] if len(names) else np.zeros(0, dtype=object)
    found = np.where(given == "", spelled, given)
    return np.asarray([model_collectives.canonical(str(n)) for n in found], dtype=object)


def _codes_of(keys: np.ndarray) -> np.ndarray:
    """Each key's number, in order of first occurrence (time order of the rows)."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(keys.astype(str), return_index=True, return_inverse=True)
    place = np.empty(len(first), dtype=np.int64)
    place[np.argsort(first, kind="stable")] = np.arange(len(first))
    found: np.ndarray = place[inverse.reshape(-1)]
    return found


def _position(combo: np.ndarray, rank_key: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Each row's place among its rank's rows of the same group and collective, in time order."""
    order = np.lexsort((ts, rank_key, combo))
    if not len(order):
        return np.zeros(0, dtype=np.int64)
    same = np.concatenate(
        [[False], (combo[order][1:] == combo[order][:-1]) & (rank_key[order][1:] == rank_key[order][:-1])]
    )
    starts = np.flatnonzero(~same)
    run_lengths = np.diff(np.append(starts, len(order)))
    within = np.arange(len(order)) - np.repeat(starts, run_lengths)
    found = np.empty(len(order), dtype=np.int64)
    found[order] = within
    return found


@dataclass(frozen=True)
class Matched:
    """Arrivals with each row's instance figures, as numpy arrays aligned with ``table``."""

    table: pa.Table
    start_ns: np.ndarray  # the row's start on the reference clock (its host's offset removed)
    first_start_ns: np.ndarray  # the instance's earliest start
    latency_ns: np.ndarray  # the instance's shortest duration
    ranks: np.ndarray  # ranks in the instance

    @property
    def skew_ns(self) -> np.ndarray:
        skew: np.ndarray = self.start_ns - self.first_start_ns
        return skew

    @property
    def wait_ns(self) -> np.ndarray:
        wait: np.ndarray = ints(self.table, "dur_ns") - self.latency_ns
        return wait

    def last_rows(self) -> np.ndarray:
        """The row of the last rank to arrive at each instance (the first row of ties), in time order."""
        return _argmax_per(ints(self.table, "instance"), self.skew_ns)


def matched(table: pa.Table, offsets_ns: dict[tuple[str, int], int] | None = None) -> Matched:
    """Per row of ``arrivals``, its instance's figures; ``offsets_ns`` ((run, rank) -> clock offset)
    are removed from the starts first. Instances seen on one rank only are dropped."""
    instance = ints(table, "instance")
    shift = np.asarray(
        [(offsets_ns or {}).get((run, rank), 0) for run, rank in zip(*_run_rank(table), strict=True)], dtype=np.int64
    )
    start = ints(table, "ts_ns") - shift
    count = np.bincount(instance, minlength=instance.max() + 1 if len(instance) else 0)
    keep = count[instance] > 1
    table, instance, start = table.filter(pa.array(keep)), instance[keep], start[keep]
    slots = instance.max() + 1 if len(instance) else 0
    first = np.full(slots, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, instance, start)
    latency = np.full(slots, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(latency, instance, ints(table, "dur_ns"))
    return Matched(table, start, first[instance], latency[instance], count[instance])


def _run_rank(table: pa.Table) -> tuple[list[str], list[int]]:
    return [str(r) for r in table.column("run").to_pylist()], ints(table, "rank").tolist()


def instances(m: Matched) -> list[dict[str, object]]:
    """One record per instance, in time order."""
    t = m.table
    instance, dur, skew, wait = ints(t, "instance"), ints(t, "dur_ns"), m.skew_ns, m.wait_ns
    out = []
    for row in m.last_rows().tolist():
        same = instance == instance[row]
        size = int(ints(t, "size_bytes")[same].max())
        group_size = int(ints(t, "group_size")[same].max())
        n = group_size if group_size > 0 else int(m.ranks[row])
        latency = int(m.latency_ns[row])
        algbw = size / latency if size >= 0 and latency > 0 else None  # bytes per ns = GB/s
        factor = bus_factor(str(t.column("collective")[row]), n)
        out.append(
            {
                "run": t.column("run")[row].as_py(),
                "group": t.column("group")[row].as_py(),
                "collective": t.column("collective")[row].as_py(),
                "number": int(ints(t, "number")[row]),
                "matched_by": t.column("matched_by")[row].as_py(),
                "ranks": int(m.ranks[row]),
                "group_size": n,
                "start_ts_ns": int(m.first_start_ns[row]),
                "size_bytes": size if size >= 0 else None,
                "latency_ns": latency,
                "max_duration_ns": int(dur[same].max()),
                "algbw_gb_s": round(algbw, 3) if algbw is not None else None,
                "busbw_gb_s": round(algbw * factor, 3) if algbw is not None and factor is not None else None,
                "last_rank": int(ints(t, "rank")[row]),
                "max_skew_ns": int(skew[row]),
                "wait_ns": int(wait[same].sum()),
                "example_id": int(ints(t, "event_id")[row]),
            }
        )
    return out


def _argmax_per(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """For each group (in order of first row), the row with the largest value (the first of ties)."""
    order = np.lexsort((np.arange(len(group)), -value, group))
    firsts = order[np.concatenate([[True], group[order][1:] != group[order][:-1]])] if len(order) else order
    found: np.ndarray = firsts[np.argsort(firsts, kind="stable")]
    return found


INSTANCE_SCHEMA = [
    ("run", pa.string()),
    ("group", pa.string()),
    ("collective", pa.string()),
    ("number", pa.int64()),
    ("matched_by", pa.string()),
    ("ranks", pa.int32()),
    ("group_size", pa.int32()),
    ("start_ts_ns", pa.int64()),
    ("size_bytes", pa.int64()),
    ("latency_ns", pa.int64()),
    ("max_duration_ns", pa.int64()),
    ("algbw_gb_s", pa.float64()),
    ("busbw_gb_s", pa.float64()),
    ("last_rank", pa.int32()),
    ("max_skew_ns", pa.int64()),
    ("wait_ns", pa.int64()),
    ("example_id", pa.int64()),
]


def wall_ns(events: pa.Table) -> dict[tuple[str, int], int]:
    """(run, rank) -> from its first event's start to its last event's end."""
    found = {}
    for key, part in per_rank(events):
        ts = ints(part, "ts_ns")
        found[key] = int((ts + ints(part, "dur_ns")).max() - ts.min()) if len(ts) else 0
    return found


def rank_waits(m: Matched, walls: dict[tuple[str, int], int]) -> list[dict[str, object]]:
    """One record per rank: what it spent in matched collectives, and waiting in them for others."""
    t = m.table
    runs, ranks = _run_rank(t)
    key = _rank_key(t)
    dur, wait = ints(t, "dur_ns"), m.wait_ns
    last = np.zeros(len(t), dtype=bool)
    last[m.last_rows()] = True
    out = []
    for row in _argmax_per(key, wait).tolist():  # each rank's longest wait
        mine = key == key[row]
        wall = walls.get((runs[row], ranks[row]), 0)
        waited = int(wait[mine].sum())
        out.append(
            {
                "run": runs[row],
                "rank": ranks[row],
                "instances": int(mine.sum()),
                "collective_ns": int(dur[mine].sum()),
                "wait_ns": waited,
                "wall_ns": wall,
                "wait_pct": round(100.0 * waited / wall, 2) if wall > 0 else 0.0,
                "arrived_last": int((last & mine).sum()),
                "longest_wait_ns": int(wait[row]),
                "longest_wait_in": instance_name(t, row),
                "example_id": int(ints(t, "event_id")[row]),
            }
        )
    return sorted(out, key=lambda r: (str(r["run"]), int(str(r["rank"]))))


def instance_name(t: pa.Table, row: int) -> str:
    """How an instance is named to a user: ``allreduce seq 12 in group 0``, ``sendrecv #3 by order``."""
    group = t.column("group")[row].as_py()
    number = int(ints(t, "number")[row])
    how = f"seq {number}" if t.column("matched_by")[row].as_py() == "seq" else f"#{number} by order"
    return f"{t.column('collective')[row].as_py()} {how}" + (f" in group {group}" if group else "")


WAIT_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("instances", pa.int32()),
    ("collective_ns", pa.int64()),
    ("wait_ns", pa.int64()),
    ("wall_ns", pa.int64()),
    ("wait_pct", pa.float64()),
    ("arrived_last", pa.int32()),
    ("longest_wait_ns", pa.int64()),
    ("longest_wait_in", pa.string()),
    ("example_id", pa.int64()),
]
