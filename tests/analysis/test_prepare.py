"""``prepared``: the events' few-valued dictionary columns indexed in 8 bits, values unchanged."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.analysis import prepared


def _events(kinds: list[str], categories: list[str]) -> pa.Table:
    chunks = [
        pa.table(
            {
                "kind": pa.array(kinds[half], pa.string()).dictionary_encode(),
                "category": pa.array(categories[half], pa.string()).dictionary_encode(),
                "name": pa.array(kinds[half], pa.string()).dictionary_encode(),
            }
        )
        for half in (slice(0, len(kinds) // 2), slice(len(kinds) // 2, None))
    ]
    return pa.concat_tables(chunks)


def test_few_valued_dictionary_columns_are_indexed_in_8_bits_values_unchanged() -> None:
    # GIVEN events in two chunks whose kinds and categories are few, one row null
    kinds = ["kernel", "cpu_op", None, "kernel"]
    events = _events(kinds, ["a", "b", "c", "a"])  # type: ignore[list-item]
    # WHEN prepared
    ready = prepared({"events": events})["events"]
    # THEN kind and category are indexed in 8 bits, name (of many values in a trace) in 32, each in one chunk
    assert ready.schema.field("kind").type == pa.dictionary(pa.int8(), pa.string())
    assert ready.schema.field("category").type == pa.dictionary(pa.int8(), pa.string())
    assert ready.schema.field("name").type.index_type == pa.int32()
    assert ready.column("kind").num_chunks == 1
    # AND every value reads as before
    assert ready.column("kind").to_pylist() == kinds
    assert ready.column("category").to_pylist() == ["a", "b", "c", "a"]


def test_a_dictionary_of_more_than_127_values_keeps_32_bit_indices() -> None:
    # GIVEN events of 128 distinct categories
    categories = [f"c{i}" for i in range(128)]
    events = _events(["kernel"] * 128, categories)
    # WHEN prepared
    ready = prepared({"events": events})["events"]
    # THEN the categories' indices stay 32 bits (8 would not hold them), the kinds' narrow
    assert ready.schema.field("category").type.index_type == pa.int32()
    assert ready.schema.field("kind").type.index_type == pa.int8()
    assert ready.column("category").to_pylist() == categories
