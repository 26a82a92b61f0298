"""Joining per-rank tables whose columns the summary's read narrowed differently."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kinetoscope.analysis._tables.rank_slices import concat_widened


def test_a_column_read_in_32_bits_on_one_rank_and_64_on_another_joins_in_64() -> None:
    # GIVEN rank 0's ids read in 32 bits (they fit) and rank 1's in 64 (from 2**40)
    rank0 = pa.table({"id": pa.array([1, 2], pa.int32()), "depth": pa.array([0, 1], pa.int32())})
    rank1 = pa.table({"id": pa.array([2**40], pa.int64()), "depth": pa.array([0], pa.int32())})
    # WHEN joined, THEN the ids are 64-bit and whole, and a column of one type everywhere keeps it
    joined = concat_widened([rank0, rank1])
    assert joined.schema.field("id").type == pa.int64()
    assert joined.column("id").to_pylist() == [1, 2, 2**40]
    assert joined.schema.field("depth").type == pa.int32()


def test_a_column_read_in_16_bits_on_one_rank_and_32_on_another_joins_in_32() -> None:
    # GIVEN a rank's steps in 16 bits (its values fit) and another's in 32 (as declared)
    rank0 = pa.table({"step": pa.array([1, -1], pa.int16())})
    rank1 = pa.table({"step": pa.array([70_000], pa.int32())})
    # WHEN they are joined; THEN in 32 bits, the declared width, every value kept
    joined = concat_widened([rank0, rank1])
    assert joined.schema.field("step").type == pa.int32()
    assert joined.column("step").to_pylist() == [1, -1, 70_000]


def test_dictionary_indices_of_8_and_32_bits_join_in_32() -> None:
    narrow = pa.table({"kind": pa.array(["op"]).dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string()))})
    wide = pa.table({"kind": pa.array(["kernel", "op"]).dictionary_encode()})
    joined = concat_widened([narrow, wide])
    assert joined.schema.field("kind").type == pa.dictionary(pa.int32(), pa.string())
    assert joined.column("kind").to_pylist() == ["op", "kernel", "op"]


def test_any_other_difference_of_types_is_an_error_not_a_silent_cast() -> None:
    # a float where another rank has integers is a bug in a result table, not a narrowed read
    with pytest.raises(pa.ArrowTypeError):
        concat_widened([pa.table({"x": pa.array([1], pa.int64())}), pa.table({"x": pa.array([1.5])})])
