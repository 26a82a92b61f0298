"""Input shapes of op rows, read from their ``args`` (``record_shapes=True``): ``Input Dims``,
``Input type`` and ``Concrete Inputs``, each as JSON text (null where the op has none; dims without
spaces, so equal shapes have equal text).

The args texts are dictionary-encoded once, and the distinct texts again cut to the span from
their first field key to their last ``]`` (what lies around it, ``"External id":7`` or
``"Sequence number":3``, differs on nearly every row and is never part of a shape), so each
field's regular expression runs over the distinct shape texts that hold its key (a plain
substring search first), never once per row, and each row takes its text's value by index.
Callers parse the few distinct values they need.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.model import kinds

_LIST = r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # a list of ints or of lists of ints (TensorList inputs)
_DIMS = r'"Input Dims":\s*(?P<value>\[(?:\s*' + _LIST + r"\s*,?)*\s*\])"
_STRINGS = r'(?P<value>\[(?:\s*"(?:[^"\\]|\\.)*"\s*,?)*\s*\])'
_TYPES = r'"Input type":\s*' + _STRINGS
_CONCRETE = r'"Concrete Inputs":\s*' + _STRINGS
FIELDS = {"input_dims": _DIMS, "input_types": _TYPES, "concrete_inputs": _CONCRETE}
_KEYS = {"input_dims": '"Input Dims"', "input_types": '"Input type"', "concrete_inputs": '"Concrete Inputs"'}
# The first of any key in one pass over the texts (the keys hold no pattern characters), not one pass per key.
_ANY_KEY = "|".join(_KEYS.values())


def text_codes(args: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(each row's index into the distinct shape texts of the args, -1 for null; those texts)."""
    if pa.types.is_dictionary(args.type):
        args = args.cast(pa.string())
    chunked = args if isinstance(args, pa.ChunkedArray) else pa.chunked_array([args])
    memo = _MEMO.get()
    if memo is None:
        return _cut_codes(chunked)
    found, texts = _encoded(chunked)
    shape_of, shape_texts = memo.shape_texts(texts)
    code = np.full(len(found), -1, dtype=np.int32)
    code[found >= 0] = shape_of[found[found >= 0]]
    return code, shape_texts


def _cut_codes(args: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """``text_codes`` with each row's text cut to its shape text first (``_shape_texts``'s cut), chunk
    by chunk, and only those encoded: nearly every row's args text differs from the others' (its ids),
    so encoding the whole texts first costs a hash table and a dictionary of about their size (8.7
    MiB at the peak for the 2.2 MiB of a 54 MB trace's ops' args). The same codes and texts: the
    shape texts in the order of their first row, then ``{}``."""
    held, cut, shapes = _cut(args.chunks, args.type)
    valid = np.concatenate([np.zeros(0, dtype=bool)] + [
        np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False), dtype=bool) for chunk in args.chunks
    ])  # fmt: skip
    code = np.where(valid, cut[-1], -1).astype(np.int32)  # no key before a ``]``: ``{}``
    code[held] = cut[:-1]
    return code, shapes


def _cut(chunks: Sequence[pa.Array], kind: pa.DataType) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """(whether each text of ``chunks`` holds a field key before a ``]``; the code of each such
    text's shape text, then the code of ``{}``; the distinct shape texts, as strings): each text
    cut from its first field key to its last ``]``, and only the cuts encoded."""
    held, spans = [np.zeros(0, dtype=bool)], []
    for chunk in chunks:
        start, end = _field_spans(chunk)
        held.append(end > start)
        spans.append(_slices(chunk, start[held[-1]], end[held[-1]]))
    encoded = pc.dictionary_encode(pa.concat_arrays([*spans, pa.array(["{}"], kind)]))
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    return np.concatenate(held), code, encoded.dictionary.cast(pa.string())


def _encoded(texts: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(each row's index into the distinct ``texts``, -1 for null; the distinct texts): one
    encoding of all chunks, which share its dictionary, so no chunk is copied first."""
    encoded = pc.dictionary_encode(texts)
    if not encoded.num_chunks:
        return np.zeros(0, dtype=np.int32), pa.array([], texts.type)
    dictionary = encoded.chunk(encoded.num_chunks - 1).dictionary
    if not all(chunk.dictionary.equals(dictionary) for chunk in encoded.chunks):
        encoded = pa.chunked_array([pc.dictionary_encode(texts.combine_chunks())])
        dictionary = encoded.chunk(0).dictionary
    indices = pa.chunked_array([chunk.indices for chunk in encoded.chunks], pa.int32())
    found: np.ndarray = pc.fill_null(indices, -1).to_numpy().astype(np.int32, copy=False)
    return found, dictionary


def _shape_texts(texts: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(each of the distinct ``texts``' index into the distinct shape texts; those, as strings). A
    text's shape text runs from the first field key it holds to its last ``]`` (``{}`` when it holds none
    before a ``]``): every field's match begins at its key and ends at a ``]``, so each field reads
    the same in both, and texts that differ only in the ids and sequence numbers around the shapes
    (``"External id":7``, new on nearly every row) share one shape text."""
    held, code, shapes = _cut([texts], texts.type)
    shape_of = np.full(len(texts), code[-1], dtype=np.int32)  # no key before a ``]``: every field null
    shape_of[held] = code[:-1]
    return shape_of, shapes  # few texts: the shape columns' type


class ShapeMemo:
    """The shape text of each distinct args text cut so far, kept across the ranks of a summary made
    rank by rank (``remembered``): ranks that run one program hold the same args texts (the same
    ids in the same order), so a text is cut once (``_shape_texts``), not once per rank. It keeps
    at most ``MAX_BYTES`` of texts, and stops taking texts once a rank's texts were mostly new
    (ranks whose ids differ share nothing: remembering them would only cost)."""

    MAX_BYTES = 64 << 20

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taking = True
        self._bytes = 0  # of the texts kept
        self._texts = pa.array([], pa.string())  # the distinct args texts cut so far
        self._shape_of = np.zeros(0, dtype=np.int32)  # each one's index into _shapes
        self._shapes = pa.array([], pa.string())  # the distinct shape texts

    def shape_texts(self, texts: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """``_shape_texts(texts)``: each text's index into the distinct shape texts, and those."""
        with self._lock:
            if not len(self._texts):
                self._texts = self._texts.cast(texts.type)
            texts = texts.cast(self._texts.type) if not texts.type.equals(self._texts.type) else texts
            known = pc.fill_null(pc.index_in(texts, value_set=self._texts), -1).to_numpy().astype(np.int64)
            shape_of = self._shape_of[np.maximum(known, 0)] if len(self._shape_of) else np.zeros(len(texts), np.int32)
            new = np.flatnonzero(known < 0)
            if len(new):
                mostly_new = len(self._texts) > 0 and 2 * len(new) > len(texts)
                self._taking = self._taking and not mostly_new
                shape_of[new] = self._added(texts.take(pa.array(new, pa.int64())))
            return shape_of.astype(np.int32, copy=False), self._shapes

    def _added(self, texts: pa.Array) -> np.ndarray:
        """``texts``' indices into the distinct shape texts, the new ones among them added."""
        shape_of, shapes = _shape_texts(texts)
        at = pc.fill_null(pc.index_in(shapes, value_set=self._shapes), -1).to_numpy().astype(np.int64)
        unseen = np.flatnonzero(at < 0)
        at[unseen] = len(self._shapes) + np.arange(len(unseen))
        self._shapes = pa.concat_arrays([self._shapes, shapes.take(pa.array(unseen, pa.int64()))])
        codes: np.ndarray = at[shape_of].astype(np.int32)
        size_bytes = int(pc.sum(pc.binary_length(texts)).as_py() or 0)
        if self._taking and self._bytes + size_bytes <= self.MAX_BYTES:
            self._bytes += size_bytes
            self._texts = pa.concat_arrays([self._texts, texts])
            self._shape_of = np.concatenate([self._shape_of, codes])
        return codes


_MEMO: ContextVar[ShapeMemo | None] = ContextVar("kinetoscope_shape_memo", default=None)


@contextlib.contextmanager
def remembered() -> Iterator[ShapeMemo]:
    """One ``ShapeMemo`` for the input shapes read in the block (and in threads it starts with
    ``contextvars.copy_context``)."""
    token = _MEMO.set(ShapeMemo())
    try:
        yield _MEMO.get()  # type: ignore[misc]
    finally:
        _MEMO.reset(token)


def _field_spans(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(the byte offset in the data of each text's first field key, the end of its last ``]``
    after that; both 0 where there is none, or no text)."""
    at = pc.fill_null(pc.find_substring_regex(texts, _ANY_KEY), -1).to_numpy(zero_copy_only=False).astype(np.int64)
    held = at >= 0
    offsets, data = _buffers(texts)
    start = offsets[:-1] + np.where(held, at, 0)
    closes = np.flatnonzero(data == ord("]")) if held.any() else np.zeros(0, np.int64)
    last = np.searchsorted(closes, offsets[1:], side="left") - 1  # the last ``]`` before each text's end
    end = np.where(last >= 0, closes[np.maximum(last, 0)] + 1, 0) if len(closes) else np.zeros(len(texts), np.int64)
    kept = held & (end > start)
    return np.where(kept, start, 0), np.where(kept, end, 0)


def _buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(the offsets of a string array's texts into its data, one more than texts; the data bytes)."""
    width = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    _, offset_buffer, data_buffer = texts.buffers()
    offsets = np.frombuffer(offset_buffer, width)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return offsets, data


def _slices(texts: pa.Array, start: np.ndarray, end: np.ndarray) -> pa.Array:
    """The data bytes ``[start, end)`` of ``texts`` (a string array) as strings of its type, one
    per span (no more bytes than its data, so its offsets hold them)."""
    _, data = _buffers(texts)
    lengths = end - start
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    at = np.repeat(start - offsets[:-1], lengths) + np.arange(int(offsets[-1]), dtype=np.int64)
    body = pa.py_buffer(np.ascontiguousarray(data[at]))
    large = pa.types.is_large_string(texts.type)
    bounds = pa.py_buffer(offsets if large else offsets.astype(np.int32))
    return pa.Array.from_buffers(texts.type, len(lengths), [None, bounds, body])


def _field_values(texts: pa.Array, key: str, pattern: str, compact: bool) -> pa.Array:
    """The field's value in each of the distinct ``texts`` (null: no such key, or no match)."""
    holds = np.asarray(pc.match_substring(texts, key).to_numpy(zero_copy_only=False), dtype=bool)
    found = pc.struct_field(pc.extract_regex(texts.filter(pa.array(holds)), pattern), "value")
    if compact:
        found = pc.replace_substring_regex(found, r"\s+", "")
    at = np.where(holds, np.cumsum(holds) - 1, 0)
    return pc.take(found, pa.array(at, mask=~holds))


def _shapes_of(code: np.ndarray, texts: pa.Array) -> dict[str, pa.Array]:
    """The three shape columns of rows whose args are ``texts[code]`` (-1: no args); a field no
    text holds is nulls, with no gather: one column of nulls for all such fields (its offsets
    alone take 4 bytes a row: 40 MB at 10 M events, where a trace records no shapes, per field)."""
    at = pa.array(np.where(code < 0, len(texts), code).astype(np.int32))  # len(texts): the null after them
    found = {}
    nulls = None
    for name, pattern in FIELDS.items():
        values = _field_values(texts, _KEYS[name], pattern, name == "input_dims")
        if values.null_count == len(values):
            nulls = nulls if nulls is not None else pa.nulls(len(code), pa.string())
            found[name] = nulls
        else:
            found[name] = pa.concat_arrays([values, pa.nulls(1, pa.string())]).take(at)
    return found


def source_columns(events: pa.Table) -> list[str]:
    """The columns ``input_shapes`` reads from: the shapes ``with_shapes`` added, else ``args``."""
    return list(FIELDS) if all(name in events.column_names for name in FIELDS) else ["args"]


def with_shapes(events: pa.Table, framework: np.ndarray) -> pa.Table:
    """``events`` with the three shape columns, read once from the args of the ``framework`` rows
    but Python frames (null on the others: shapes are asked of ops and annotations only, and a
    frame's args, its ids, differ on every row), for every analysis to share."""
    if "args" not in events.column_names or source_columns(events) == list(FIELDS):
        return events
    return appended(events, shape_columns(events, framework))


def shape_columns(events: pa.Table, framework: np.ndarray) -> dict[str, pa.Array]:
    """The three shape columns ``with_shapes`` adds to ``events`` (which has ``args``)."""
    framework = framework & ~_python_frames(events)
    of_framework, texts = text_codes(events.column("args").filter(pa.array(framework)))
    code = np.full(events.num_rows, -1, dtype=np.int32)
    code[framework] = of_framework
    return _shapes_of(code, texts)


def appended(events: pa.Table, columns: dict[str, pa.Array]) -> pa.Table:
    for name, column in columns.items():
        events = events.append_column(name, column)
    return events


def _python_frames(events: pa.Table) -> np.ndarray:
    """Rows of kind ``python`` (none without a ``kind`` column); of a dictionary column, the
    test runs on each chunk's dictionary, not on every row."""
    if "kind" not in events.column_names:
        return np.zeros(events.num_rows, dtype=bool)
    column = events.column("kind")
    if not pa.types.is_dictionary(column.type):
        return np.asarray(pc.fill_null(pc.equal(column, kinds.PYTHON), False).to_numpy(zero_copy_only=False), bool)
    parts = [np.zeros(0, dtype=bool)]
    for chunk in column.chunks:
        hit = pc.fill_null(pc.equal(chunk.dictionary, kinds.PYTHON), False).to_numpy(zero_copy_only=False)
        parts.append(np.append(np.asarray(hit, dtype=bool), False)[pc.fill_null(chunk.indices, -1).to_numpy()])
    return np.concatenate(parts)


def input_shapes(rows: pa.Table) -> pa.Table:
    """``input_dims``, ``input_types`` and ``concrete_inputs`` of each row of ``rows``: the columns
    ``with_shapes`` added, or read from ``args``."""
    if source_columns(rows) == list(FIELDS):
        return rows.select(list(FIELDS))
    if rows.num_rows == 0:
        return pa.table({name: pa.array([], pa.string()) for name in FIELDS})
    return pa.table(_shapes_of(*text_codes(rows.column("args"))))
