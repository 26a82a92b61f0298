"""Input shapes read from the args JSON text, once per distinct text."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.analysis.shapes import input_shapes


def test_shapes_of_repeated_missing_null_and_spaced_args_in_several_chunks() -> None:
    # GIVEN args over two chunks: a shape repeated, one with spaces, one without the keys, a null
    first = [
        '{"External id":1,"Input Dims":[[64,512],[512]],"Input type":["float","float"]}',
        '{"External id":2}',
        '{"External id":3,"Input Dims":[[64,512],[512]],"Input type":["float","float"]}',
    ]
    second = [None, '{"Input Dims": [[2, 3], []], "Concrete Inputs":["", "1"]}', first[0]]
    rows = pa.table({"args": pa.chunked_array([pa.array(first), pa.array(second)])})
    # WHEN the shapes are read THEN each row has its own, spaces dropped from dims, null where none
    found = input_shapes(rows)
    assert found.column("input_dims").to_pylist() == [
        "[[64,512],[512]]", None, "[[64,512],[512]]", None, "[[2,3],[]]", "[[64,512],[512]]"
    ]
    assert found.column("input_types").to_pylist() == [
        '["float","float"]', None, '["float","float"]', None, None, '["float","float"]'
    ]
    assert found.column("concrete_inputs").to_pylist() == [None, None, None, None, '["", "1"]', None]
