"""Device time rolled up to the framework ops that launched it.

Every kernel, copy and set takes the op of the runtime call that launched it (``events.op_id``:
the nearest enclosing op or annotation of that call). From there it is summed per op name, per op
name and input shape (``Input Dims``, ``Input type``), and per outermost op or annotation (the top
of the ``op_id`` chain, ``ProfilerStep#N`` left out), so ``record_function`` regions and the
top-level ops of a step show the device time of everything under them. Device work with no
launching op is counted on its own line: launched before the profiling window opened, or
launched by a call no op encloses (or with no flow at all).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import code_groups, examples, intervals, reuse
from kinetoscope.analysis._tables.column_arrays import code_view, encoded, ints, read_only
from kinetoscope.analysis._tables.id_lookup import id_positions, narrow_positions
from kinetoscope.analysis._tables.masks import is_in, not_empty, starts_with
from kinetoscope.analysis._tables.rank_slices import Tables, for_rows, per_rank
from kinetoscope.analysis._tables.result_tables import pct, rows
from kinetoscope.analysis._tables.selection import DEVICE_WORK, MEMORY_WORK, launched_outside, where
from kinetoscope.analysis.ops import shapes
from kinetoscope.analysis.settings import categories
from kinetoscope.analysis.settings.options import DEFAULT_TOP, TopOptions
from kinetoscope.model import kinds

BEFORE_WINDOW = "(launched before the window)"
NO_OP = "(no launching op)"
NO_MODULE = "(no module)"
STEP_PREFIX = kinds.STEP_PREFIX
MODULE_PREFIX = "nn.Module: "


@dataclass(frozen=True)
class Launches:
    """One rank's events, its device work, and where each piece of work's launching op sits."""

    events: pa.Table
    work: np.ndarray  # positions in ``events`` of the device work rows
    op: np.ndarray  # position of each work row's launching op (-1: none)
    busy_ns: int  # union of the device work intervals
    dur_ns: np.ndarray  # duration of each work row (read-only)


def launches(events: pa.Table) -> Launches:
    """The rank's device work and launching ops; found once per run of rows inside
    ``reuse.reusing()`` (many analyses and rules ask, of a rank's slice and of that slice of a view
    without ``args``), its arrays read-only."""
    return reuse.cached(
        events, "launches", lambda: Launches(events, *for_rows(events, "launches", lambda: _launches(events)))
    )


def _launches(events: pa.Table) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    work_mask = is_in(events, "kind", DEVICE_WORK)
    work = np.flatnonzero(work_mask)
    op = id_positions(events, ints(events, "op_id")[work])
    starts = ints(events, "ts_ns")[work]
    dur_ns = ints(events, "dur_ns")[work]
    busy_ns = intervals.length(starts, starts + dur_ns)
    return read_only(work), read_only(op), busy_ns, read_only(dur_ns)


def op_parents(events: pa.Table) -> np.ndarray:
    """Position of each row's enclosing op or annotation (-1 at the top); step markers are no parent.
    Found once per table inside ``reuse.reusing()``; read-only."""
    return for_rows(events, "op_parents", lambda: read_only(_op_parents(events)))


def op_up(events: pa.Table) -> np.ndarray:
    """Position of each row's ``op_id`` row (-1: none or not in the table), step markers included.
    Found once per table inside ``reuse.reusing()``; read-only, in 32 bits where they fit."""
    return for_rows(events, "op_up", lambda: read_only(narrow_positions(_op_rows(events), events.num_rows)))


def _op_rows(events: pa.Table) -> np.ndarray:
    return id_positions(events, ints(events, "op_id"))


def _op_parents(events: pa.Table) -> np.ndarray:
    up = op_up(events)
    step = starts_with(events, "name", STEP_PREFIX)
    found: np.ndarray = np.where((up >= 0) & ~step[np.maximum(up, 0)], up, -1)
    return found


def outermost(up: np.ndarray) -> np.ndarray:
    """Position of each row's outermost op (itself at the top), by pointer jumping."""
    top = np.where(up >= 0, up, np.arange(len(up)))
    while True:
        nxt = top[top]
        if np.array_equal(nxt, top):
            return top
        top = nxt


def inclusive_ns(up: np.ndarray, op: np.ndarray, dur_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(device ns, kernels) per row of the work launched under it, its own and its descendants':
    each piece of work walks up its op chain a level at a time, and the (row, work) pairs of all
    levels are counted in one pass."""
    every, of_piece = _chain_pairs(up, op)
    total = code_groups.sums(every, dur_ns[of_piece], len(up))
    return total, np.bincount(every, minlength=len(up)).astype(np.int64, copy=False)


def inclusive_time_ns(up: np.ndarray, op: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """``inclusive_ns``'s device ns alone (no count of the kernels: 8 bytes per row less)."""
    every, of_piece = _chain_pairs(up, op)
    return code_groups.sums(every, dur_ns[of_piece], len(up))


def _chain_pairs(up: np.ndarray, op: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, piece of work) pairs: each piece of work ``op`` launched, with every row up its op chain."""
    at, piece = op[op >= 0], np.flatnonzero(op >= 0)
    rows, pieces = [at], [piece]
    while len(at):
        keep = up[at] >= 0
        at, piece = up[at][keep], piece[keep]
        rows.append(at)
        pieces.append(piece)
    return np.concatenate(rows), np.concatenate(pieces)


def nearest_module(events: pa.Table, start: np.ndarray) -> np.ndarray:
    """Position of the nearest ``nn.Module:`` frame enclosing each row of ``start`` on its thread,
    by ``parent_id`` (-1: none), one level of the whole set at a time."""
    parent = id_positions(events, ints(events, "parent_id"))
    module = is_in(events, "kind", (kinds.PYTHON,)) & starts_with(events, "name", MODULE_PREFIX)
    found = np.full(len(start), -1, dtype=np.int64)
    at = start.copy()
    searching = at >= 0
    while searching.any():
        hit = searching & module[np.maximum(at, 0)]
        found[hit] = at[hit]
        at = np.where(searching & ~hit, parent[np.maximum(at, 0)], -1)
        searching = at >= 0
    return found


Labels = tuple[np.ndarray, tuple[str, ...]]  # each row's index into the labels, the labels
_UNLAUNCHED = (BEFORE_WINDOW, NO_OP)


def _unlaunched_labels(launched: Launches) -> Labels:
    """The label of each piece of work for when it has no launching op; once per run of rows inside
    ``reuse.reusing()`` (each roll-up asks), read-only."""
    return for_rows(launched.events, "unlaunched_labels", lambda: (read_only(_labels_of(launched)), _UNLAUNCHED))


def _labels_of(launched: Launches) -> np.ndarray:
    before = launched_outside(launched.events)[launched.work]
    labels: np.ndarray = np.where(before, _UNLAUNCHED.index(BEFORE_WINDOW), _UNLAUNCHED.index(NO_OP))
    return labels


def _unlaunched(table: pa.Table) -> np.ndarray:
    """Rows of a grouped table whose first key is a no-launching-op (or no-module) label."""
    found = pc.is_in(table.column(0), pa.array([BEFORE_WINDOW, NO_OP, NO_MODULE]))
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


class Values:
    """Distinct values: a list shared by many callers, then a few more after it, without a copy."""

    def __init__(self, first: Sequence[str], more: Sequence[str] = ()) -> None:
        self.first, self.more = first, more

    def __len__(self) -> int:
        return len(self.first) + len(self.more)

    def __getitem__(self, at: int) -> str:
        return self.first[at] if at < len(self.first) else self.more[at - len(self.first)]

    def strings(self, codes: np.ndarray) -> pa.Array:
        """The values at ``codes``, as an Arrow string array."""
        return pa.array([self[code] for code in codes.tolist()], pa.string())


Key = tuple[np.ndarray, Values]  # each work row's index into the values, the distinct values


def _places(code: np.ndarray, values: Values) -> np.ndarray:
    """Each code's place in Arrow's (bytewise) ascending order of its value, equal values equal
    places; only the codes present are made strings."""
    present, back = np.unique(code, return_inverse=True)
    place = np.empty(len(present), dtype=np.int64)
    place[pc.sort_indices(values.strings(present)).to_numpy()] = np.arange(len(present))
    found: np.ndarray = place[back.reshape(-1)]
    return found


def _grouped(keys: dict[str, Key], instance: np.ndarray, launched: Launches) -> pa.Table:
    """calls (distinct launching op instances), kernels, gpu_ns, pct_of_busy and the longest piece
    of work (``example_id``, the first of the longest) per key, most device time first, then by the
    keys' values; grouped by the keys' codes in numpy, a string made per group only."""
    work_id = ints(launched.events, "id")[launched.work]
    group, count = code_groups.grouped([code for code, _ in keys.values()], [len(v) for _, v in keys.values()])
    gpu_ns = code_groups.sums(group, launched.dur_ns, count)
    one = code_groups.one_row_each(group, count)
    key_codes = {name: code[one] for name, (code, _) in keys.items()}
    ranks = [_places(key_codes[name], values) for name, (_, values) in reversed(keys.items())]
    order = np.lexsort([*ranks, -gpu_ns])
    out = pa.table({name: values.strings(key_codes[name][order]) for name, (_, values) in keys.items()})
    calls = np.where(_unlaunched(out), 0, code_groups.distinct_counts(group, instance, count)[order])
    share = np.round(100.0 * gpu_ns / launched.busy_ns, 2) if launched.busy_ns > 0 else np.zeros(count)
    columns = {
        "kernels": np.bincount(group, minlength=count),
        "gpu_ns": gpu_ns,
        "pct_of_busy": share,
        "example_id": examples.example_ids(group, launched.dur_ns, work_id, count),
    }
    out = out.append_column("calls", pa.array(calls, pa.int64()))
    for name, values in columns.items():
        out = out.append_column(name, pa.array(values[order], pa.float64() if name == "pct_of_busy" else pa.int64()))
    return out


def _names_at(events: pa.Table, at: np.ndarray, fallback: Labels) -> Key:
    """The name code of the row at each of ``at``, else that place's ``fallback`` label's, and the
    names (the column's dictionary, with the labels used added): codes picked in numpy."""
    name_codes, names, index = _name_index(events)
    label_of, labels = fallback
    more: list[str] = []
    label_codes = np.zeros(len(labels), dtype=np.int64)
    for used in np.flatnonzero(np.bincount(label_of[at < 0], minlength=len(labels))).tolist():
        label = labels[used]
        if label in index:  # a label that is also a name reads as that name
            label_codes[used] = index[label]
            continue
        if label not in more:
            more.append(label)
        label_codes[used] = len(names) + more.index(label)
    named = name_codes[np.maximum(at, 0)].astype(np.int64) if len(name_codes) else np.zeros(len(at), dtype=np.int64)
    return np.where(at >= 0, named, label_codes[label_of] if len(labels) else 0), Values(names, more)


def _name_index(events: pa.Table) -> tuple[np.ndarray, list[str], dict[str, int]]:
    """(each row's name code, the names, each name's code), once per run of rows inside
    ``reuse.reusing()`` (each roll-up asks; a trace with stacks has many names)."""

    def found() -> tuple[np.ndarray, list[str], dict[str, int]]:
        name_codes, names = code_view(events, "name")
        return read_only(name_codes), names, {name: code for code, name in enumerate(names)}

    return for_rows(events, "name_index", found)


def _text_key(column: pa.Array | pa.ChunkedArray) -> Key:
    """A string column's codes and distinct values, null read as ``""``."""
    code, distinct = encoded(pc.fill_null(column, ""))
    return code, Values([str(value) for value in distinct.to_pylist()])


def _with_rank(table: pa.Table, run: str, rank: int) -> pa.Table:
    table = table.add_column(0, "rank", pa.array([rank] * table.num_rows, pa.int32()))
    return table.add_column(0, "run", pa.array([run] * table.num_rows, pa.string()))


def _top_and_unlaunched(table: pa.Table, top: int) -> pa.Table:
    """The first ``top`` rows, and the no-launching-op lines wherever they rank."""
    keep = _unlaunched(table) | (np.arange(table.num_rows) < top)
    return where(table, keep)


Builder = Callable[[Launches], pa.Table]
_GROUP_SCHEMA = [
    ("calls", pa.int64()),
    ("kernels", pa.int64()),
    ("gpu_ns", pa.int64()),
    ("pct_of_busy", pa.float64()),
    ("example_id", pa.int64()),
]


def _per_rank_tables(tables: Tables, build: Builder, keys: list[tuple[str, pa.DataType]], top: int) -> pa.Table:
    parts = []
    for (run, rank), events in per_rank(tables["events"]):
        launched = launches(events)
        if len(launched.work):
            parts.append(_with_rank(_top_and_unlaunched(build(launched), top), run, rank))
    schema = pa.schema([("run", pa.string()), ("rank", pa.int32()), *keys, *_GROUP_SCHEMA])
    return pa.concat_tables([p.cast(schema) for p in parts]) if parts else schema.empty_table()


def _by_op(launched: Launches) -> pa.Table:
    names = _names_at(launched.events, launched.op, _unlaunched_labels(launched))
    return _grouped({"op": names}, launched.op, launched)


def _by_top_op(launched: Launches) -> pa.Table:
    up = op_parents(launched.events)
    at = np.where(launched.op >= 0, outermost(up)[np.maximum(launched.op, 0)], -1)
    names = _names_at(launched.events, at, _unlaunched_labels(launched))
    return _grouped({"top_op": names}, at, launched)


def _by_module(launched: Launches) -> pa.Table:
    at = nearest_module(launched.events, launched.op)
    label_of, labels = _unlaunched_labels(launched)
    fallback = (np.where(launched.op >= 0, len(labels), label_of), (*labels, NO_MODULE))
    names = _names_at(launched.events, at, fallback)
    return _grouped({"module": names}, at, launched)


def _by_shape(launched: Launches) -> pa.Table:
    names = _names_at(launched.events, launched.op, _unlaunched_labels(launched))
    source = launched.events.select(shapes.source_columns(launched.events))
    found = shapes.input_shapes(source.take(pa.array(launched.op, mask=launched.op < 0)))  # null: no op
    keys = {"op": names, "input_dims": _text_key(found.column("input_dims"))}
    return _grouped({**keys, "input_types": _text_key(found.column("input_types"))}, launched.op, launched)


def gpu_time_by_op(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, device time (kernels, copies, sets) by the framework op that launched it: op
    instances, kernels, device time and its share of device busy time; device work with no
    launching op on its own lines (launched before the window, or no op and no flow)."""
    return _per_rank_tables(tables, _by_op, [("op", pa.string())], options.top)


def gpu_time_by_shape(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, device time by launching op and its input shapes (``Input Dims``, ``Input type``
    recorded with ``record_shapes=True``; empty when not recorded)."""
    keys = [("op", pa.string()), ("input_dims", pa.string()), ("input_types", pa.string())]
    return _per_rank_tables(tables, _by_shape, keys, options.top)


def gpu_time_by_top_op(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, device time by the outermost op or annotation above its launching op
    (``record_function`` regions, module-level ops; ``ProfilerStep#N`` is not counted as one)."""
    return _per_rank_tables(tables, _by_top_op, [("top_op", pa.string())], options.top)


def _name_categories(events: pa.Table, ordered: categories.Rules) -> tuple[np.ndarray, np.ndarray, int]:
    """(each row's name index, -1 for null; the category of each distinct name, then of ``""``,
    which a missing launching op or a null op name reads as; that last index): the patterns run
    once per rank over the distinct names, not once per use."""
    code, distinct = encoded(events.column("name"), widened=False)  # indexed by only: no int64 copy
    by_name = categories.categorise(pa.concat_arrays([distinct, pa.array([""], pa.string())]), ordered)
    return code, by_name, len(distinct)


def _work_categories(
    launched: Launches, ordered: categories.Rules, names: tuple[np.ndarray, np.ndarray, int]
) -> np.ndarray:
    """Category of each piece of device work: copies and sets are memory, collective kernels are
    communication, others take their launching op's category, else their own name's."""
    code, by_name, empty = names
    names_of = categories.labels(ordered)
    other = names_of.index(categories.OTHER)
    op_code = np.where(launched.op >= 0, code[np.maximum(launched.op, 0)], empty)
    by_op = by_name[np.where(op_code >= 0, op_code, empty)]
    own = code[launched.work]
    found = np.where(by_op != other, by_op, np.where(own >= 0, by_name[own], other))
    events = launched.events  # the rank's masks, kept for the whole table, read at the work rows
    found[not_empty(events, "collective")[launched.work]] = names_of.index(categories.COMMUNICATION)
    found[is_in(events, "kind", MEMORY_WORK)[launched.work]] = names_of.index(categories.MEMORY)
    return found


def _category_rows(events: pa.Table, ordered: categories.Rules) -> dict[str, np.ndarray]:
    names_of = categories.labels(ordered)
    launched = launches(events)
    names = _name_categories(events, ordered)
    work_category = _work_categories(launched, ordered, names)
    ops = is_in(events, "kind", (kinds.OP,))
    code, by_name, _ = names
    op_code = code[ops]
    op_category = np.where(op_code >= 0, by_name[op_code], names_of.index(categories.OTHER))
    del op_code
    size = len(names_of)
    return {
        "kernels": np.bincount(work_category, minlength=size),
        "gpu_ns": np.bincount(work_category, weights=launched.dur_ns, minlength=size).astype(np.int64),
        "gpu_pct": np.zeros(size)
        if launched.busy_ns <= 0
        else np.round(
            100.0 * np.bincount(work_category, weights=launched.dur_ns, minlength=size) / launched.busy_ns, 2
        ),
        "op_calls": np.bincount(op_category, minlength=size),
        "op_self_ns": code_groups.sums(op_category, ints(events, "self_ns")[ops], size),
    }


def gpu_time_by_module(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, device time by the nearest ``nn.Module:`` frame (``with_stack=True``, or
    ``with_modules=True``) enclosing its launching op on the op's thread; work launched outside
    any module (the backward pass, the optimizer) is ``(no module)``."""
    return _per_rank_tables(tables, _by_module, [("module", pa.string())], options.top)


def time_by_category(tables: Tables) -> pa.Table:
    """Per rank and op category (GEMM, attention, convolution, ...: name patterns in
    ``analysis/settings/categories.py``, overridable by a user file): device work, its time and share of
    device busy time, and framework ops, their calls and self time."""
    ordered = categories.rules()
    names_of = categories.labels(ordered)
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        found = _category_rows(events, ordered)
        whole_self = int(found["op_self_ns"].sum())
        for code in np.argsort(-(found["gpu_ns"] * 1.0 + found["op_self_ns"] * 1e-9), kind="stable").tolist():
            if found["kernels"][code] or found["op_calls"][code]:
                row = {key: values[code].item() for key, values in found.items()}
                records.append(
                    {
                        "run": run,
                        "rank": rank,
                        "category": names_of[code],
                        **row,
                        "op_self_pct": pct(row["op_self_ns"], whole_self),
                    }
                )
    return rows(_CATEGORY_SCHEMA, records)


_CATEGORY_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("category", pa.string()),
    ("kernels", pa.int64()),
    ("gpu_ns", pa.int64()),
    ("gpu_pct", pa.float64()),
    ("op_calls", pa.int64()),
    ("op_self_ns", pa.int64()),
    ("op_self_pct", pa.float64()),
]
