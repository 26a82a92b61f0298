"""Input shapes of op rows, read from their ``args`` (``record_shapes=True``): ``Input Dims``,
``Input type`` and ``Concrete Inputs``, each as JSON text (null where the op has none; dims without
spaces, so equal shapes have equal text).

The args JSON text is matched with one regular expression per field over the rows whose text
holds the field's key (no per-row parsing); callers parse the few distinct values they need.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LIST = r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # a list of ints or of lists of ints (TensorList inputs)
_DIMS = r'"Input Dims":\s*(?P<value>\[(?:\s*' + _LIST + r"\s*,?)*\s*\])"
_STRINGS = r'(?P<value>\[(?:\s*"(?:[^"\\]|\\.)*"\s*,?)*\s*\])'
_TYPES = r'"Input type":\s*' + _STRINGS
_CONCRETE = r'"Concrete Inputs":\s*' + _STRINGS
FIELDS = {"input_dims": _DIMS, "input_types": _TYPES, "concrete_inputs": _CONCRETE}
_KEYS = {"input_dims": '"Input Dims"', "input_types": '"Input type"', "concrete_inputs": '"Concrete Inputs"'}


def _extract(args: pa.Array | pa.ChunkedArray, key: str, pattern: str, compact: bool) -> pa.Array:
    """The field's value in each row's args; the regular expression runs only on the distinct
    texts of the rows that hold the key at all (a plain substring search; ops of one shape repeat
    their args), the others are null."""
    holds = np.asarray(pc.fill_null(pc.match_substring(args, key), False).to_numpy(zero_copy_only=False), bool)
    if not holds.any():
        return pa.nulls(len(args), pa.string())
    held = pc.filter(args, pa.array(holds))
    texts = pc.dictionary_encode(held.combine_chunks() if isinstance(held, pa.ChunkedArray) else held)
    value = pc.struct_field(pc.extract_regex(texts.dictionary, pattern), "value")
    if compact:
        value = pc.replace_substring_regex(value, r"\s+", "")
    at = np.where(holds, np.cumsum(holds) - 1, 0)
    of_row = texts.indices.to_numpy(zero_copy_only=False)[at]
    return pc.take(value, pa.array(of_row, mask=~holds))  # null: no such key


def source_columns(events: pa.Table) -> list[str]:
    """The columns ``input_shapes`` reads from: the shapes ``with_shapes`` added, else ``args``."""
    return list(FIELDS) if all(name in events.column_names for name in FIELDS) else ["args"]


def with_shapes(events: pa.Table, framework: np.ndarray) -> pa.Table:
    """``events`` with the three shape columns, read once from the args of the ``framework`` rows
    (null on the others: shapes are asked of ops and annotations only), for every analysis to share."""
    if "args" not in events.column_names or source_columns(events) == list(FIELDS):
        return events
    found = input_shapes(events.select(["args"]).filter(pa.array(framework)))
    at = pa.array(np.where(framework, np.cumsum(framework) - 1, 0), mask=~framework)  # null: not framework
    for name in FIELDS:
        events = events.append_column(name, pc.take(found.column(name), at) if len(found) else pa.nulls(len(at)))
    return events


def input_shapes(rows: pa.Table) -> pa.Table:
    """``input_dims``, ``input_types`` and ``concrete_inputs`` of each row of ``rows``: the columns
    ``with_shapes`` added, or read from ``args``."""
    if source_columns(rows) == list(FIELDS):
        return rows.select(list(FIELDS))
    args = rows.column("args")
    if pa.types.is_dictionary(args.type):
        args = args.cast(pa.string())
    if rows.num_rows == 0:
        return pa.table({name: pa.array([], pa.string()) for name in FIELDS})
    return pa.table(
        {name: _extract(args, _KEYS[name], pattern, name == "input_dims") for name, pattern in FIELDS.items()}
    )
