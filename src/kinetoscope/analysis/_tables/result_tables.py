"""Result tables: rows from records, percentages, and a stack's innermost frame as a label."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import ints, strings


def rows(schema: Sequence[tuple[str, pa.DataType]], records: list[dict[str, Any]]) -> pa.Table:
    """A result table from dict records (missing keys are null)."""
    arrow_schema = pa.schema(list(schema))
    return pa.Table.from_pylist(records, schema=arrow_schema)


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def frame_labels(frames: pa.Table) -> dict[int, str]:
    """``stack_id`` -> its innermost frame as ``name (file:line)``, from the ``frames`` table."""
    return {
        sid: f"{name} ({file}:{line})"
        for sid, name, file, line in zip(
            ints(frames, "stack_id").tolist(),
            strings(frames, "name"),
            strings(frames, "file"),
            ints(frames, "line").tolist(),
            strict=True,
        )
    }
