"""The collective metadata Kineto copies from ``record_param_comms`` onto a collective's rows
(``Seq``, ``Process Group Name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``),
read from the args text of many rows at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables.column_arrays import encoded
from kinetoscope.model.collectives import DTYPE_BYTES

NO_VALUE = -1  # an absent number


@dataclass(frozen=True)
class Meta:
    """The collective metadata of rows, one array entry per row (``NO_VALUE`` / "" where absent)."""

    group: np.ndarray  # Process Group Name, else Process Group ID
    seq: np.ndarray
    size_bytes: np.ndarray  # the larger of In and Out msg nelems, times the dtype's size
    group_size: np.ndarray


def _arg(texts: pa.ChunkedArray, key: str, value: str) -> pa.ChunkedArray:
    """The value of ``key`` in each args text (null where absent), by pattern: the args are Kineto's
    JSON object as recorded, one key once, so no row is decoded in Python."""
    return pc.struct_field(pc.extract_regex(texts, f'"{key}":\\s*{value}'), [0])


def _int_arg(texts: pa.ChunkedArray, key: str) -> np.ndarray:
    found = pc.cast(_arg(texts, key, '"?(?P<v>-?[0-9]+)"?'), pa.int64())
    values: np.ndarray = pc.fill_null(found, NO_VALUE).to_numpy()
    return values


def read_meta(texts: pa.ChunkedArray) -> Meta:
    """The metadata Kineto copies from ``record_param_comms`` onto a collective's rows."""
    texts = pc.fill_null(texts.cast(pa.string()), "")
    group = pc.coalesce(*(_group_of(texts, key) for key in ("Process Group Name", "Process Group ID")), "")
    nelems = np.maximum(_int_arg(texts, "In msg nelems"), _int_arg(texts, "Out msg nelems"))
    dtype_code, dtypes = encoded(pc.struct_field(pc.extract_regex(texts, '"dtype":\\s*"(?P<v>[^"]*)"'), [0]))
    element = np.append(np.asarray([DTYPE_BYTES.get(str(d), NO_VALUE) for d in dtypes.to_pylist()]), NO_VALUE)
    element = element[dtype_code].astype(np.int64)  # dtype code -1 (none) takes the appended NO_VALUE
    size = np.where((nelems >= 0) & (element > 0), nelems * element, NO_VALUE)
    groups = np.asarray(group.to_pylist(), dtype=object)
    return Meta(groups, _int_arg(texts, "Seq"), size, _int_arg(texts, "Group size"))


def _group_of(texts: pa.ChunkedArray, key: str) -> pa.ChunkedArray:
    """A group's name (as written, escapes kept) or number, as text; null where absent."""
    found = pc.extract_regex(texts, f'"{key}":\\s*(?:"(?P<s>(?:[^"\\\\]|\\\\.)*)"|(?P<n>-?[0-9]+))')
    name, number = pc.struct_field(found, [0]), pc.struct_field(found, [1])
    return pc.if_else(pc.equal(name, ""), number, name)
