"""Dataset tables made ready for the analyses (``prepared``): dictionary columns sharing one
dictionary, every column but ``args`` in one chunk, the few-valued dictionary columns' indices in
8 bits, the framework rows' input shapes read once."""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.masks import is_in
from kinetoscope.analysis._tables.rank_slices import Tables
from kinetoscope.analysis.ops import shapes


def prepared(tables: Tables, threads: int = 1) -> dict[str, pa.Table]:
    """``tables`` made quick for the analyses, values unchanged but for the ``collective`` of kernels the
    user's communication patterns match (``user_communication.applied``): the events' dictionary columns share
    one dictionary over all chunks, and ``run`` is one of them, so a string test runs once per
    distinct value and a per-rank split reads integers; where the events have ``args``, the input
    shapes of the framework rows are read from them once (``shapes.with_shapes``). ``threads``
    threads copy the columns into one chunk and read the shapes meanwhile (the same table). The
    indices of ``NARROWED`` columns of at most 127 distinct values are kept in 8 bits, not 32 (a
    summary holds the table to its end: 3 bytes per row each)."""
    out = dict(tables)
    events = tables.get("events")
    if events is None:
        return out
    ready = reuse.cached(events, "prepared", lambda: _prepared_events(events, threads))
    out["events"] = reuse.cached(ready, "prepared", lambda: ready)  # prepared already: as it is
    return out


def _prepared_events(events: pa.Table, threads: int) -> pa.Table:
    from kinetoscope.analysis.collectives import user_communication  # it reads these frames

    events = user_communication.applied(events)  # users' communication patterns: the collective column
    if "run" in events.column_names and not pa.types.is_dictionary(events.schema.field("run").type):
        events = events.set_column(events.column_names.index("run"), "run", encoded_by_chunk(events.column("run")))
    events = events.unify_dictionaries()
    if "layer" not in events.column_names:
        return _one_chunk(events, map)
    if threads <= 1 or "args" not in events.column_names or shapes.source_columns(events) != ["args"]:
        events = _one_chunk(events, map)
        return shapes.with_shapes(events, is_in(events, "layer", ("framework",)))
    with cf.ThreadPoolExecutor(threads, thread_name_prefix="kinetoscope-prepare") as pool:
        found = pool.submit(shapes.shape_columns, events, is_in(events, "layer", ("framework",)))
        events = _one_chunk(events, pool.map)
        return shapes.appended(events, found.result())


def encoded_by_chunk(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """``column`` dictionary-encoded chunk by chunk (the chunks' dictionaries unified after): a
    chunk of one value throughout (a dataset part's ``run``) without hashing each row. Chunks of
    no rows are left out, as ``pc.dictionary_encode`` leaves them."""
    chunks = []
    for chunk in (chunk for chunk in column.chunks if len(chunk)):
        if not chunk.null_count and pc.all(pc.equal(chunk, chunk[0])).as_py():
            indices = pa.array(np.zeros(len(chunk), dtype=np.int32))
            chunks.append(pa.DictionaryArray.from_arrays(indices, pa.array([chunk[0].as_py()], chunk.type)))
        else:
            chunks.append(pc.dictionary_encode(chunk))
    return pa.chunked_array(chunks, pa.dictionary(pa.int32(), column.type))


# Dictionary columns of few values (the model's layers and kinds, a trace's categories, collectives
# and runs) whose indices fit 8 bits where the dictionary does; ``name``'s many values keep 32.
NARROWED = ("run", "layer", "kind", "category", "collective")
_NARROW_MAX = 127  # the most distinct values (nulls aside) indexed in 8 bits


def _one_chunk(events: pa.Table, mapping: Callable[..., Iterator[pa.ChunkedArray]]) -> pa.Table:
    """``events`` with every column but ``args`` in one chunk, so a column of a rank's slice reads
    as numpy without a copy and filters run once per column, not once per Parquet row group
    (``args``, the largest, is read by few and stays as it was), and ``NARROWED`` columns with
    8-bit indices where their dictionary fits; each column copied by ``mapping`` (``map``, or a
    thread pool's)."""
    names = [name for name in events.column_names if name != "args" and _copied(events.column(name), name)]
    combined = mapping(_combined, [events.column(name) for name in names], names)
    for name, column in zip(names, combined, strict=True):
        events = events.set_column(events.column_names.index(name), name, column)
    return events


def _copied(column: pa.ChunkedArray, name: str) -> bool:
    return column.num_chunks > 1 or not narrow_type(column, name).equals(column.type)


def narrow_type(column: pa.ChunkedArray, name: str) -> pa.DataType:
    """The type ``prepared`` keeps ``column`` (of name ``name``) in: a ``NARROWED`` dictionary
    column of one dictionary (unified) of at most ``_NARROW_MAX`` values with 8-bit indices, else
    its own."""
    kind = column.type
    if name not in NARROWED or not pa.types.is_dictionary(kind) or kind.index_type == pa.int8():
        return kind
    if column.num_chunks and len(column.chunk(0).dictionary) > _NARROW_MAX:
        return kind
    return pa.dictionary(pa.int8(), kind.value_type, kind.ordered)


def _combined(column: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    kind = narrow_type(column, name)
    whole = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return pa.chunked_array([whole if kind.equals(column.type) else whole.cast(kind)], kind)
