"""Input shapes of op rows, read from their ``args`` (``record_shapes=True``): ``Input Dims``,
``Input type`` and ``Concrete Inputs``, each as JSON text (null where the op has none; dims without
spaces, so equal shapes have equal text).

The args texts are dictionary-encoded once, and the distinct texts again without their leading
and trailing integer pairs (``"External id":7``, ``"Sequence number":3``: different on nearly
every row, never part of a shape), so each field's regular expression runs over the distinct
shape texts that hold its key (a plain substring search first), never once per row, and each row
takes its text's value by index. Callers parse the few distinct values they need.
"""

from __future__ import annotations

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

# Pairs of a word key and an integer value at either end of an args text, dropped before the
# fields are read: no field's match can begin in them (their values are no lists) or reach into
# them (a match ends at a ``]``, which they lack), so every field reads the same without them.
_INT_PAIR = r'"[\w ]+":-?\d+'
_ONLY_INTS = (r"^\{(?:" + _INT_PAIR + r",)*" + _INT_PAIR + r"\}$", "{}")
_LEADING_INTS = (r"^\{(?:" + _INT_PAIR + r",)+", "{")
_TRAILING_INTS = (r"(?:," + _INT_PAIR + r")+\}$", "}")


def _text_codes(args: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(each row's index into the distinct args texts, -1 for null; the distinct texts)."""
    if pa.types.is_dictionary(args.type):
        args = args.cast(pa.string())
    whole = args.combine_chunks() if isinstance(args, pa.ChunkedArray) else args
    texts = pc.dictionary_encode(whole)
    found: np.ndarray = pc.fill_null(texts.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    shape_of, shape_texts = _shape_texts(texts.dictionary)
    return np.where(found < 0, -1, shape_of[np.maximum(found, 0)]).astype(np.int32), shape_texts


def _shape_texts(texts: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(each of the distinct ``texts``' index into the distinct texts left without their integer
    pairs at either end; those texts), each field reading the same in both."""
    if not len(texts):
        return np.zeros(0, dtype=np.int32), texts
    stripped = texts
    for pattern, replacement in (_ONLY_INTS, _LEADING_INTS, _TRAILING_INTS):
        stripped = pc.replace_substring_regex(stripped, pattern, replacement)
    encoded = pc.dictionary_encode(stripped)
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32), encoded.dictionary


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
    text holds is nulls, with no gather."""
    at = pa.array(np.where(code < 0, len(texts), code).astype(np.int32))  # len(texts): the null after them
    found = {}
    for name, pattern in FIELDS.items():
        values = _field_values(texts, _KEYS[name], pattern, name == "input_dims")
        if values.null_count == len(values):
            found[name] = pa.nulls(len(code), pa.string())
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
    framework = framework & ~_python_frames(events)
    of_framework, texts = _text_codes(events.column("args").filter(pa.array(framework)))
    code = np.full(events.num_rows, -1, dtype=np.int32)
    code[framework] = of_framework
    for name, column in _shapes_of(code, texts).items():
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
    return pa.table(_shapes_of(*_text_codes(rows.column("args"))))
