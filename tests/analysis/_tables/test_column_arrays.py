"""Columns as numpy: a string column's codes, copied to int64 or viewed as they are."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import code_view, codes


def test_code_view_of_a_dictionary_column_is_its_indices_uncopied_and_reads_as_codes() -> None:
    # GIVEN a one-chunk dictionary column without nulls
    names = pa.array(["mm", "add", "mm", "relu"]).dictionary_encode()
    table = pa.table({"name": names})
    # WHEN its codes are viewed
    view, values = code_view(table, "name")
    # THEN they are the codes ``codes`` copies to int64, in the column's own buffer (32 bits)
    copied, copied_values = codes(table, "name")
    assert view.tolist() == copied.tolist() and values == copied_values
    assert view.dtype == np.int32
    assert np.shares_memory(view, np.frombuffer(names.indices.buffers()[1], dtype=np.int32))


def test_code_view_of_a_column_with_nulls_or_without_a_dictionary_is_codes() -> None:
    for column in (pa.array(["mm", None, "add"]).dictionary_encode(), pa.array(["mm", "add", "mm"])):
        table = pa.table({"name": column})
        view, values = code_view(table, "name")
        copied, copied_values = codes(table, "name")
        assert view.tolist() == copied.tolist() and values == copied_values
        assert view.dtype == np.int64
