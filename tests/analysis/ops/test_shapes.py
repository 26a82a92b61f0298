"""Input shapes read from the args JSON text, once per distinct text."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis.ops.shapes import FIELDS, input_shapes, remembered, text_codes, with_shapes


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


def test_with_shapes_reads_the_framework_rows_and_leaves_the_others_null() -> None:
    # GIVEN events whose kernel row carries a shape-like args text, and framework rows with and without
    args = [
        '{"External id":1,"Input Dims":[[8, 8]],"Input type":["float"]}',
        '{"Input Dims":[[9,9]]}',
        None,
        '{"External id":2,"Input Dims":[[8, 8]],"Input type":["float"]}',
        '{"External id":3}',
    ]
    events = pa.table({"name": ["mm", "kernel", "op", "mm", "op"], "args": pa.chunked_array([args[:2], args[2:]])})
    framework = np.array([True, False, True, True, True])
    # WHEN the shapes are added THEN the framework rows have theirs, the kernel none
    found = with_shapes(events, framework)
    assert found.column("input_dims").to_pylist() == ["[[8,8]]", None, None, "[[8,8]]", None]
    assert found.column("input_types").to_pylist() == ['["float"]', None, None, '["float"]', None]
    assert found.column("concrete_inputs").null_count == 5
    # AND they are those input_shapes reads from the same rows; a table with them is kept as it is
    assert input_shapes(found.select(["input_dims", "input_types", "concrete_inputs"])).equals(
        found.select(["input_dims", "input_types", "concrete_inputs"])
    )
    assert with_shapes(found, framework) is found


def test_python_frames_are_not_read_for_shapes() -> None:
    # GIVEN an op and a Python frame (whose args hold ids, different on every row), kind encoded
    args = ['{"Input Dims":[[2]]}', '{"Python parent id":1,"Python id":2,"Input Dims":[[3]]}']
    kind = pa.array(["op", "python"]).dictionary_encode()
    events = pa.table({"kind": kind, "args": args})
    # WHEN the shapes are added THEN the op has its shape and the frame none
    found = with_shapes(events, np.array([True, True]))
    assert found.column("input_dims").to_pylist() == ["[[2]]", None]
    plain = with_shapes(events.set_column(0, "kind", pa.array(["op", "python"])), np.array([True, True]))
    assert plain.column("input_dims").to_pylist() == ["[[2]]", None]


def _each_text_alone(texts: list[str | None]) -> dict[str, list[str | None]]:
    """Each field read from each text by itself, the whole text: what sharing texts must match."""
    found: dict[str, list[str | None]] = {name: [] for name in FIELDS}
    for text in texts:
        alone = pa.array([text], pa.string())
        for name, pattern in FIELDS.items():
            value = pc.struct_field(pc.extract_regex(alone, pattern), "value")
            if name == "input_dims":
                value = pc.replace_substring_regex(value, r"\s+", "")
            found[name].append(value[0].as_py())
    return found


def test_integer_pairs_around_the_shapes_change_no_field() -> None:
    # GIVEN args as torch writes them (ids and sequence numbers around the shapes), and texts whose
    # integer pairs sit inside strings, hold a field's key, or are not plain integers
    texts = [
        '{"External id":1,"Record function id":0,"Ev Idx":0,"Input Dims":[[4,8],[8]],"Input type":["float","float"],'
        '"Concrete Inputs":["",""],"Sequence number":17,"Fwd thread id":1}',
        '{"External id":2,"Record function id":0,"Ev Idx":1,"Input Dims":[[4,8],[8]],"Input type":["float","float"],'
        '"Concrete Inputs":["",""],"Sequence number":18,"Fwd thread id":1}',
        '{"External id":3,"Sequence number":4}',
        '{"Input Dims":5,"External id":6,"Input Dims":[[1]]}',
        '{"External id":7,"Concrete Inputs":["a,\\"b\\":1}"],"Seq":2}',
        '{"External id":1.5,"Input Dims":[[2]],"x":-3}',
        '{"External id":8,"Input type":["int"],"Input Dims":7}',
        "{}",
        None,
        '{"nom":"été","Input Dims":[[3]],"Input type":["a]"],"Sequence number":1}',
        '{"a":"]","Input Dims":3}',
    ]
    for kind in (pa.string(), pa.large_string()):
        rows = pa.table({"args": pa.chunked_array([pa.array(texts[:4], kind), pa.array(texts[4:], kind)])})
        # WHEN the shapes are read from the shared texts THEN every field is what the whole text gives
        found = input_shapes(rows)
        for name, expected in _each_text_alone(texts).items():
            assert found.column(name).to_pylist() == expected, (name, kind)
        # AND the rows that differ only in their ids and sequence numbers share one text
        code, shared = text_codes(rows.column("args"))
        assert code[0] == code[1] and code[2] == code[7] == code[10] and code[8] == -1
        assert len(shared) == len(texts) - 4


def test_args_all_null_or_none_give_null_shapes() -> None:
    # GIVEN rows whose args are all null, and no rows at all
    for texts in ([None, None], []):
        rows = pa.table({"args": pa.array(texts, pa.string())})
        # WHEN the shapes are read THEN every row's are null
        found = input_shapes(rows)
        assert found.num_rows == len(texts)
        assert all(found.column(name).null_count == len(texts) for name in FIELDS)


def test_shapes_remembered_across_ranks_are_the_shapes_read_afresh() -> None:
    # GIVEN two ranks' args sharing most texts (one program on both), and a memo holding two texts at most
    one = ['{"External id":1,"Input Dims":[[4,4]],"Input type":["float"]}', '{"External id":2}', None]
    two = [one[0], '{"External id":9,"Input Dims":[[2, 2],[2]],"Input type":["c10::Half","float"]}', one[1], None]
    three = [*two, '{"External id":5,"Input Dims":[[7]],"Concrete Inputs":["", "3"]}']
    tables = [pa.table({"args": pa.array(texts, pa.large_string())}) for texts in (one, two, three)]
    fresh = [input_shapes(table).to_pylist() for table in tables]
    # WHEN they are read one after another with a memo THEN each rank's shapes are those read afresh
    with remembered() as memo:
        memo.MAX_BYTES = len(one[0]) + len(one[1]) + len(two[1])  # the first two ranks' texts, not the third's
        assert [input_shapes(table).to_pylist() for table in tables] == fresh
        assert [input_shapes(table).to_pylist() for table in reversed(tables)] == fresh[::-1]
    # AND ranks that share no texts (other ids) read the same shapes once the memo stops taking them
    other = pa.table({"args": pa.array([t.replace('"External id":', '"External id":10') if t else t for t in two])})
    with remembered():
        assert [input_shapes(t).to_pylist() for t in (tables[0], other, tables[2])] == [
            fresh[0], input_shapes(other).to_pylist(), fresh[2]
        ]
    assert fresh[1][1]["input_dims"] == "[[2,2],[2]]" and fresh[2][4]["concrete_inputs"] == '["", "3"]'
