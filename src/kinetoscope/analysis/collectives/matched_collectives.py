"""Collectives matched across ranks: each instance of a collective found on every rank that ran it.

Which rows of the ranks are one instance is decided by ``model.matching``: by process group and
Kineto's ``Seq`` where recorded, else by each rank's order of the group's collective aligned to a
reference rank's (within ``ProfilerStep#N`` where the ranks' steps line up), so that a window
that opens after a collective the other ranks still hold does not shift the rest (``matched_by``
says which). A rank's row of an instance is its collective kernel, or on a rank without
collective kernels (CPU, gloo) its host collective (``gloo:all_reduce``). The metadata is read
by ``collective_meta``.

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

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import codes, ints, read_only
from kinetoscope.analysis._tables.masks import is_in, not_empty
from kinetoscope.analysis._tables.rank_slices import per_rank
from kinetoscope.analysis._tables.selection import gathered
from kinetoscope.analysis.collectives import user_communication
from kinetoscope.analysis.collectives.collective_meta import NO_VALUE, read_meta
from kinetoscope.model import collectives as model_collectives
from kinetoscope.model import kinds, matching
from kinetoscope.model.collectives import bus_factor


def collective_rows(events: pa.Table) -> np.ndarray:
    """Positions of each rank's collectives: its collective kernels, or on a rank with none of
    them its host collectives."""
    kernels = is_in(events, "kind", (kinds.KERNEL,)) & not_empty(events, "collective")
    host = is_in(events, "kind", (kinds.COLLECTIVE,))
    candidates = np.flatnonzero(kernels | host)  # few of the rows: their ranks found for them alone
    rank_key = _rank_key(events.select(["run", "rank"]).take(pa.array(candidates, pa.int64())))
    found: np.ndarray = candidates[matching.rank_rows(kernels[candidates], rank_key)]
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
    ("step", pa.int32()),
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
    that group and collective, within its step where the ranks' steps line up), the step it was
    numbered in (-1: none), how it was matched, and that rank's row. Found once per table inside
    ``reuse.reusing()``."""
    return reuse.cached(events, "arrivals", lambda: _arrivals(events))


def _arrivals(events: pa.Table) -> pa.Table:
    events = user_communication.applied(events)  # the user's communication kernels are collectives too
    rows = collective_rows(events)
    has_args = "args" in events.column_names
    picked = (events.drop_columns(["args"]) if has_args else events).take(pa.array(rows, pa.int64()))
    texts = gathered(events.column("args"), rows) if has_args else pa.chunked_array([pa.nulls(len(rows))])
    meta = read_meta(texts)
    run_code, runs = codes(picked, "run")
    canonical = _canonical_names(picked)
    groups = meta.group
    combo = _codes_of(run_code, _string_codes(groups), _string_codes(canonical))
    rank_key, ts = _rank_key(picked), ints(picked, "ts_ns")
    steps = ints(picked, "step") if "step" in picked.column_names else np.full(picked.num_rows, -1)
    found = matching.numbers(combo, rank_key, meta.seq, meta.size_bytes, ts + ints(picked, "dur_ns"), step=steps)
    bucket, key, how = found.step, found.number, found.how
    out = {
        "run": [runs[c] for c in run_code.tolist()],
        "rank": ints(picked, "rank"),
        "instance": _codes_of(combo, bucket, key),
        "group": groups,
        "collective": canonical,
        "number": key,
        "step": bucket.astype(np.int32),
        "matched_by": how,
        "event_id": ints(picked, "id"),
        "ts_ns": ts,
        "dur_ns": ints(picked, "dur_ns"),
        "size_bytes": meta.size_bytes,
        "group_size": meta.group_size.astype(np.int32),
    }
    table = pa.table({name: pa.array(out[name], kind) for name, kind in ARRIVAL_SCHEMA})
    return table.take(pa.array(np.lexsort((ints(table, "rank"), ts)), pa.int64()))


def _canonical_names(picked: pa.Table) -> np.ndarray:
    """Each row's collective in one spelling; where its ``collective`` is empty, the one its name spells."""
    name_code, names = codes(picked, "collective")
    event_code, event_names = codes(picked, "name")
    spelled = [model_collectives.canonical(model_collectives.spelled(n)) for n in event_names]
    given = [model_collectives.canonical(n) if n else "" for n in names]  # distinct values, not rows
    by_name = np.asarray(given or [""], dtype=object)[name_code]
    found: np.ndarray = np.where(by_name == "", np.asarray(spelled or [""], dtype=object)[event_code], by_name)
    return found


def _string_codes(values: np.ndarray) -> np.ndarray:
    """A number per distinct string of ``values`` (an object array)."""
    encoded_values = pc.dictionary_encode(pa.array(values, pa.string()))
    found: np.ndarray = encoded_values.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return found


def _codes_of(*columns: np.ndarray) -> np.ndarray:
    """A number per distinct combination of the int ``columns``, in order of first occurrence
    (time order of the rows)."""
    count = len(columns[0])
    if not count:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(columns[::-1])
    ordered = [column[order] for column in columns]
    new = np.ones(count, dtype=bool)
    new[1:] = np.any(np.stack([c[1:] != c[:-1] for c in ordered]), axis=0)
    code = np.empty(count, dtype=np.int64)
    code[order] = np.cumsum(new) - 1
    first = np.full(int(code.max()) + 1, count, dtype=np.int64)
    np.minimum.at(first, code, np.arange(count))
    place = np.empty(len(first), dtype=np.int64)
    place[np.argsort(first, kind="stable")] = np.arange(len(first))
    found: np.ndarray = place[code]
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
    are removed from the starts first. Instances seen on one rank only are dropped. Found once per
    table and offsets inside ``reuse.reusing()`` (the cross-rank analyses, the clock offsets and
    the straggler rule ask); its arrays read-only."""
    key = ("matched", *sorted((offsets_ns or {}).items()))
    return reuse.cached(table, key, lambda: _matched(table, offsets_ns))


def _matched(table: pa.Table, offsets_ns: dict[tuple[str, int], int] | None) -> Matched:
    instance = ints(table, "instance")
    start = ints(table, "ts_ns") - _shifts(table, offsets_ns or {})
    ranks = _per_instance(instance, _first_of_rank(instance, _rank_key(table)).astype(np.int64), np.add, 0)
    keep = ranks[instance] > 1 if len(instance) else np.zeros(0, dtype=bool)
    table, instance, start = table.filter(pa.array(keep)), instance[keep], start[keep]
    first = _per_instance(instance, start, np.minimum, np.iinfo(np.int64).max)
    latency = _per_instance(instance, ints(table, "dur_ns"), np.minimum, np.iinfo(np.int64).max)
    figures = (start, first[instance], latency[instance], ranks[instance])
    return Matched(table, *(read_only(values) for values in figures))


def _shifts(table: pa.Table, offsets_ns: dict[tuple[str, int], int]) -> np.ndarray:
    """The clock offset of each row's rank (0 where none)."""
    shift = np.zeros(table.num_rows, dtype=np.int64)
    if not offsets_ns:
        return shift
    run_code, runs = codes(table, "run")
    rank = ints(table, "rank")
    for (run, rank_number), offset in offsets_ns.items():
        if run in runs:
            shift[(run_code == runs.index(run)) & (rank == rank_number)] = offset
    return shift


def _first_of_rank(instance: np.ndarray, rank_key: np.ndarray) -> np.ndarray:
    """Whether each row is its rank's first row of its instance (to count ranks, not rows)."""
    first = np.zeros(len(instance), dtype=bool)
    if len(instance):
        pair = _codes_of(instance, rank_key)
        seen = np.full(int(pair.max()) + 1, len(pair), dtype=np.int64)
        np.minimum.at(seen, pair, np.arange(len(pair)))
        first[seen] = True
    return first


def _per_instance(instance: np.ndarray, values: np.ndarray, how: np.ufunc, start: int) -> np.ndarray:
    """``how`` (np.add, np.minimum, np.maximum) of ``values`` over each instance's rows, by instance number."""
    found = np.full(instance.max() + 1 if len(instance) else 0, start, dtype=np.int64)
    how.at(found, instance, values.astype(np.int64))
    return found


def _run_rank(table: pa.Table) -> tuple[list[str], list[int]]:
    return [str(r) for r in table.column("run").to_pylist()], ints(table, "rank").tolist()


def instances(m: Matched) -> list[dict[str, object]]:
    """One record per instance, in time order."""
    t = m.table
    instance, dur, skew, wait = ints(t, "instance"), ints(t, "dur_ns"), m.skew_ns, m.wait_ns
    size = _per_instance(instance, ints(t, "size_bytes"), np.maximum, NO_VALUE)
    group_size = _per_instance(instance, ints(t, "group_size"), np.maximum, NO_VALUE)
    longest = _per_instance(instance, dur, np.maximum, 0)
    waited = _per_instance(instance, wait, np.add, 0)
    ends = m.start_ns + dur
    end_spread = _per_instance(instance, ends, np.maximum, np.iinfo(np.int64).min) - _per_instance(
        instance, ends, np.minimum, np.iinfo(np.int64).max
    )
    out = []
    for row in m.last_rows().tolist():
        number = instance[row]
        n = int(group_size[number]) if group_size[number] > 0 else int(m.ranks[row])
        latency, size_bytes = int(m.latency_ns[row]), int(size[number])
        algbw = size_bytes / latency if size_bytes >= 0 and latency > 0 else None  # bytes per ns = GB/s
        factor = bus_factor(str(t.column("collective")[row]), n)
        out.append(
            {
                "run": t.column("run")[row].as_py(),
                "group": t.column("group")[row].as_py(),
                "collective": t.column("collective")[row].as_py(),
                "number": int(ints(t, "number")[row]),
                "step": int(ints(t, "step")[row]),
                "matched_by": t.column("matched_by")[row].as_py(),
                "ranks": int(m.ranks[row]),
                "group_size": n,
                "start_ts_ns": int(m.first_start_ns[row]),
                "size_bytes": size_bytes if size_bytes >= 0 else None,
                "latency_ns": latency,
                "max_duration_ns": int(longest[number]),
                "algbw_gb_s": round(algbw, 3) if algbw is not None else None,
                "busbw_gb_s": round(algbw * factor, 3) if algbw is not None and factor is not None else None,
                "last_rank": int(ints(t, "rank")[row]),
                "max_skew_ns": int(skew[row]),
                "wait_ns": int(waited[number]),
                "end_spread_ns": int(end_spread[number]),
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
    ("step", pa.int32()),
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
    ("end_spread_ns", pa.int64()),
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
    _, slot = np.unique(_rank_key(t), return_inverse=True)
    slot = slot.reshape(-1)
    dur, wait = ints(t, "dur_ns"), m.wait_ns
    last = np.zeros(len(t), dtype=bool)
    last[m.last_rows()] = True
    count = np.bincount(slot)
    in_collectives = _per_instance(slot, dur, np.add, 0)
    waited = _per_instance(slot, wait, np.add, 0)
    arrived_last = _per_instance(slot, last, np.add, 0)
    out = []
    for row in _argmax_per(slot, wait).tolist():  # each rank's longest wait
        at = slot[row]
        wall = walls.get((runs[row], ranks[row]), 0)
        out.append(
            {
                "run": runs[row],
                "rank": ranks[row],
                "instances": int(count[at]),
                "collective_ns": int(in_collectives[at]),
                "wait_ns": int(waited[at]),
                "wall_ns": wall,
                "wait_pct": round(100.0 * int(waited[at]) / wall, 2) if wall > 0 else 0.0,
                "arrived_last": int(arrived_last[at]),
                "longest_wait_ns": int(wait[row]),
                "longest_wait_in": instance_name(t, row),
                "example_id": int(ints(t, "event_id")[row]),
            }
        )
    return sorted(out, key=lambda r: (str(r["run"]), int(str(r["rank"]))))


def instance_name(t: pa.Table, row: int) -> str:
    """How an instance is named to a user: ``allreduce seq 12 in group 0``, ``sendrecv #3 of step 10
    by order``, ``broadcast #0 by order``."""
    group = t.column("group")[row].as_py()
    number, step = int(ints(t, "number")[row]), int(ints(t, "step")[row])
    within = f" of step {step}" if step >= 0 else ""
    how = f"seq {number}" if t.column("matched_by")[row].as_py() == matching.SEQ else f"#{number}{within} by order"
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
