"""Input shapes of op rows, read from their ``args`` (``record_shapes=True``): ``Input Dims``,
``Input type`` and ``Concrete Inputs``, each as JSON text (null where the op has none; dims without
spaces, so equal shapes have equal text).

The args JSON text is matched with one regular expression per field over the whole column (no
per-row parsing); callers parse the few distinct values they need.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

_LIST = r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # a list of ints or of lists of ints (TensorList inputs)
_DIMS = r'"Input Dims":\s*(?P<value>\[(?:\s*' + _LIST + r"\s*,?)*\s*\])"
_STRINGS = r'(?P<value>\[(?:\s*"(?:[^"\\]|\\.)*"\s*,?)*\s*\])'
_TYPES = r'"Input type":\s*' + _STRINGS
_CONCRETE = r'"Concrete Inputs":\s*' + _STRINGS
FIELDS = {"input_dims": _DIMS, "input_types": _TYPES, "concrete_inputs": _CONCRETE}


def _extract(args: pa.Array | pa.ChunkedArray, pattern: str, compact: bool) -> pa.Array:
    value = pc.struct_field(pc.extract_regex(args, pattern), "value")
    return pc.replace_substring_regex(value, r"\s+", "") if compact else value


def input_shapes(rows: pa.Table) -> pa.Table:
    """``input_dims``, ``input_types`` and ``concrete_inputs`` of each row of ``rows`` (which has ``args``)."""
    args = rows.column("args")
    if pa.types.is_dictionary(args.type):
        args = args.cast(pa.string())
    if rows.num_rows == 0:
        return pa.table({name: pa.array([], pa.string()) for name in FIELDS})
    return pa.table({name: _extract(args, pattern, name == "input_dims") for name, pattern in FIELDS.items()})
