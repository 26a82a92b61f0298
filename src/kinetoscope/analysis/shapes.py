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
    """The field's value in each row's args; the regular expression runs only on the rows whose
    text holds the key at all (a plain substring search), the others are null."""
    holds = np.asarray(pc.fill_null(pc.match_substring(args, key), False).to_numpy(zero_copy_only=False), bool)
    if not holds.any():
        return pa.nulls(len(args), pa.string())
    value = pc.struct_field(pc.extract_regex(pc.filter(args, pa.array(holds)), pattern), "value")
    if compact:
        value = pc.replace_substring_regex(value, r"\s+", "")
    at = pa.array(np.where(holds, np.cumsum(holds) - 1, 0), mask=~holds)  # null: no such key
    return pc.take(value, at)


def input_shapes(rows: pa.Table) -> pa.Table:
    """``input_dims``, ``input_types`` and ``concrete_inputs`` of each row of ``rows`` (which has ``args``)."""
    args = rows.column("args")
    if pa.types.is_dictionary(args.type):
        args = args.cast(pa.string())
    if rows.num_rows == 0:
        return pa.table({name: pa.array([], pa.string()) for name in FIELDS})
    return pa.table(
        {name: _extract(args, _KEYS[name], pattern, name == "input_dims") for name, pattern in FIELDS.items()}
    )
