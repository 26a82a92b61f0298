"""``Dataset.table`` of a partitioned table reads its parts file by file (``query/part_files``): the
same table as ``pyarrow.dataset``'s scan of the parts, for every table, column choice and run,
and a part that file-by-file reading cannot read as the scan does is read by the scan."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from kinetoscope.dataset.schema import TABLES_BY_NAME
from kinetoscope.query import Dataset, part_files
from kinetoscope.query.dataset import PARTITIONING

from ..arrow_pools import arrow_counted
from ..ingest.helpers import ingested_scenario


def _scanned(dataset: Dataset, name: str, columns: list[str] | None, run: str | None) -> pa.Table:
    """The table as ``pyarrow.dataset`` scans it: the reading ``Dataset.table`` must equal."""
    declared = TABLES_BY_NAME[name]
    wanted = columns if columns is not None else declared.column_names()
    files = [str(path) for path in dataset.parts(name)]
    if not files:
        return declared.empty().select(wanted)
    source = pads.dataset(
        files,
        format="parquet",
        partitioning=pads.partitioning(PARTITIONING, flavor="hive"),
        partition_base_dir=str(dataset.path / name),
        schema=declared.full_schema(),
    )
    return source.to_table(columns=wanted, filter=(pads.field("run") == run) if run is not None else None)


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return Dataset(ingested_scenario("dlrm_8rank", tmp_path_factory.mktemp("dlrm")))


@pytest.mark.parametrize("run", [None, "prof", "no such run"])
def test_every_partitioned_table_reads_as_the_scan_gives_it(dlrm: Dataset, run: str | None) -> None:
    # GIVEN an 8-rank real trace set, ingested; WHEN each partitioned table is read whole and in part
    for name, declared in TABLES_BY_NAME.items():
        if not declared.partitioned:
            continue
        some = [declared.column_names()[i] for i in (-1, 0, 2) if len(declared.column_names()) > 2]
        for columns in (None, some):
            found, scanned = dlrm.table(name, columns, run), _scanned(dlrm, name, columns, run)
            # THEN the rows, their order, the columns and their types are the scan's
            assert found.schema == scanned.schema, name
            assert found.equals(scanned), name


def test_the_events_of_eight_ranks_come_in_rank_order_with_their_ranks(dlrm: Dataset) -> None:
    events = dlrm.table("events", ["rank", "id"])
    assert events.column("rank").to_pylist() == sorted(events.column("rank").to_pylist())
    assert set(events.column("rank").to_pylist()) == set(range(8))
    assert dlrm.table("events", ["rank"], run="prof").num_rows == events.num_rows > 0


def test_a_part_of_an_older_schema_is_read_by_the_scan(dlrm: Dataset, tmp_path: Path) -> None:
    # GIVEN a rank whose events part lacks a column (as a part written before the column existed)
    part = dlrm.parts("events")[0]
    copy = tmp_path / "events" / part.relative_to(dlrm.path / "events")
    copy.parent.mkdir(parents=True)
    pq.write_table(pq.read_table(part).drop_columns(["self_ns"]), copy)
    source = pads.dataset(
        [str(copy)],
        format="parquet",
        partitioning=pads.partitioning(PARTITIONING, flavor="hive"),
        partition_base_dir=str(tmp_path / "events"),
        schema=TABLES_BY_NAME["events"].full_schema(),
    )
    parts = part_files.parts_of(source, None)
    assert parts is not None and parts[0].rank == int(copy.parent.name.split("=")[1])
    # WHEN it is read file by file, THEN it is refused (the caller scans it: self_ns all null)
    wanted = pa.schema([source.schema.field(name) for name in ("run", "rank", "id", "self_ns")])
    assert part_files.read_parts(parts, wanted, threads=2) is None
    assert part_files.read_parts(parts, pa.schema([source.schema.field("id")]), threads=2) is not None


def test_a_part_outside_the_run_and_rank_folders_is_not_read_file_by_file(tmp_path: Path) -> None:
    path = tmp_path / "events" / "part-0.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), path)
    source = pads.dataset(
        [str(path)],
        format="parquet",
        partitioning=pads.partitioning(PARTITIONING, flavor="hive"),
        partition_base_dir=str(tmp_path / "events"),
    )
    assert part_files.parts_of(source, None) is None


def test_an_unknown_column_is_refused_as_the_scan_refuses_it(dlrm: Dataset) -> None:
    with pytest.raises(pa.ArrowInvalid, match="no_such_column"):
        _scanned(dlrm, "events", ["rank", "no_such_column"], None)
    with pytest.raises(pa.ArrowInvalid, match="no_such_column"):
        dlrm.table("events", ["rank", "no_such_column"])


@pytest.mark.parametrize("name", ["events", "counters", "sessions", "warnings"])
def test_one_rank_reads_as_the_scan_filtered_to_that_rank(dlrm: Dataset, name: str) -> None:
    # GIVEN the 8-rank dataset; WHEN one rank of a table is read (partitioned by rank, or not)
    whole = dlrm.table(name)
    for rank in (0, 5):
        mine = dlrm.table(name, None, "prof", rank)
        # THEN it is that rank's rows of the whole table, in their order, and only those
        expected = whole.filter(pc.equal(whole.column("rank"), rank))
        assert mine.equals(expected), (name, rank)
    assert dlrm.table(name, None, "prof", 99).num_rows == 0
    assert dlrm.manifest.ranks() == [("prof", rank) for rank in range(8)] == dlrm.manifest.ranks("prof")
    assert dlrm.manifest.ranks("no such run") == []


def test_the_rows_of_a_table_come_from_its_footers(dlrm: Dataset) -> None:
    assert dlrm.rows("events") == dlrm.table("events", ["id"]).num_rows > 0


def test_a_part_of_several_row_groups_reads_its_fixed_width_and_dictionary_columns_in_one_chunk(
    tmp_path: Path,
) -> None:
    # GIVEN a part of three row groups: integers, names (a dictionary per row group), text
    path = tmp_path / "events" / "run=r" / "rank=0" / "part-0.parquet"
    path.parent.mkdir(parents=True)
    written = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "name": pa.array(["a", "b", "c", "a", "d", "b"]).dictionary_encode(),
            "args": pa.array(["x", None, "y", "z", "", "w"]),
        }
    )
    pq.write_table(written, path, row_group_size=2)
    source = pads.dataset(
        [str(path)],
        format="parquet",
        partitioning=pads.partitioning(PARTITIONING, flavor="hive"),
        partition_base_dir=str(tmp_path / "events"),
    )
    parts = part_files.parts_of(source, None)
    assert parts is not None
    # WHEN it is read file by file
    read = part_files.read_parts(parts, pa.schema([source.schema.field(n) for n in ("id", "name", "args")]), 1)
    # THEN the names are one chunk of one dictionary (not one per row group), as are the integers,
    # and every value is the one written
    assert read is not None
    assert read.column("id").num_chunks == read.column("name").num_chunks == 1
    assert read.column("name").chunk(0).dictionary.to_pylist() == ["a", "b", "c", "d"]
    for name in ("id", "name", "args"):
        assert read.column(name).to_pylist() == written.column(name).to_pylist()


NARROW = ("id", "parent_id", "op_id", "launch_id", "tid", "stream", "correlation", "stack_id", "dur_ns", "self_ns")


def _fits(values: pa.ChunkedArray) -> bool:
    low, high = pc.min_max(values).values()
    return low.as_py() is None or (low.as_py() >= -(2**31) and high.as_py() < 2**31)


@pytest.mark.parametrize("rank", [None, 0, 3])
def test_narrowed_columns_come_in_32_bits_only_where_every_value_read_fits(dlrm: Dataset, rank: int | None) -> None:
    # GIVEN 8 ranks whose event ids are rank << 40 | index (rank 0's fit 32 bits, the others' do not)
    wide = dlrm.table("events", list(NARROW), rank=rank)
    # WHEN the events are read with the id, thread, stream and duration columns narrowed where they fit
    found = dlrm.table("events", list(NARROW), rank=rank, narrowed=NARROW)
    # THEN each column is in 32 bits exactly where all its values read (every rank's, or one's) fit,
    # in 64 where one does not (ids of ranks 1 to 7: 2**40 and more), and the values are the same
    for name in NARROW:
        expected = pa.int32() if _fits(wide.column(name)) else pa.int64()
        assert found.schema.field(name).type == expected, name
        assert found.column(name).cast(pa.int64()).equals(wide.column(name)), name
    assert found.schema.field("id").type == (pa.int32() if rank == 0 else pa.int64())
    assert found.schema.field("stream").type == pa.int32()


def test_a_column_narrowed_in_one_part_and_not_in_another_comes_in_64_bits(tmp_path: Path) -> None:
    # GIVEN two parts of one column: one of small values, one holding a value past 32 bits
    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), small)
    pq.write_table(pa.table({"id": pa.array([3, 2**40 + 5], pa.int64())}), large)
    schema = pa.schema([("id", pa.int64())])
    parts = [part_files.Part(str(small), "r", 0), part_files.Part(str(large), "r", 0)]
    # WHEN they are read narrowed, each alone and both
    alone = part_files.read_parts(parts[:1], schema, 1, narrowed=("id",))
    both = part_files.read_parts(parts, schema, 2, narrowed=("id",))
    # THEN the small part alone is in 32 bits; together, the column is in 64 with every value kept
    assert alone is not None and alone.schema.field("id").type == pa.int32()
    assert both is not None and both.schema.field("id").type == pa.int64()
    assert both.column("id").to_pylist() == [1, 2, 3, 2**40 + 5]


def test_a_32_bit_column_narrowed_comes_in_16_bits_where_its_parts_fit_else_as_declared(tmp_path: Path) -> None:
    # GIVEN two parts of a 32-bit column (and of ranks): one of small values, one holding values past 16 bits
    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    pq.write_table(pa.table({"step": pa.array([1, -1], pa.int32())}), small)
    pq.write_table(pa.table({"step": pa.array([3, 40_000], pa.int32())}), large)
    schema = pa.schema([("rank", pa.int32()), ("step", pa.int32())])
    parts = [part_files.Part(str(small), "r", 3), part_files.Part(str(large), "r", 40_000)]
    # WHEN they are read narrowed (the rank too: it comes from the part's path), each alone and both,
    # and not narrowed
    alone = part_files.read_parts(parts[:1], schema, 1, narrowed=("step", "rank"))
    both = part_files.read_parts(parts, schema, 2, narrowed=("step", "rank"))
    declared = part_files.read_parts(parts[:1], schema, 1)
    # THEN the small part alone is in 16 bits; together, the columns are in 32 with every value kept
    assert alone is not None and alone.schema.field("step").type == pa.int16()
    assert alone.schema.field("rank").type == pa.int16()
    assert both is not None and both.schema.field("step").type == pa.int32()
    assert both.schema.field("rank").type == pa.int32()
    assert both.column("step").to_pylist() == [1, -1, 3, 40_000]
    assert both.column("rank").to_pylist() == [3, 3, 40_000, 40_000]
    assert declared is not None and declared.schema.field("step").type == pa.int32()
    assert declared.schema.field("rank").type == pa.int32()


def test_run_comes_dictionary_encoded_only_where_narrowed_names_it(dlrm: Dataset) -> None:
    # GIVEN 8 ranks of one run; WHEN the events are read with and without ``run`` among the narrowed
    text = dlrm.table("events", ["run", "rank"])
    encoded = dlrm.table("events", ["run", "rank"], narrowed=("run",))
    # THEN the readers that name it get a dictionary of 32-bit indices (4 bytes a row, not the name
    # and its offset), the others text, with the same values
    assert encoded.schema.field("run").type == pa.dictionary(pa.int32(), pa.string())
    assert text.schema.field("run").type == pa.string()
    assert encoded.column("run").cast(pa.string()).equals(text.column("run"))
    assert encoded.column("rank").equals(text.column("rank"))


def test_a_text_column_is_read_a_row_group_at_a_time_and_peaks_near_what_it_keeps(tmp_path: Path) -> None:
    # GIVEN a part of 20 row groups of args-like text (66 bytes a row as read)
    rows = 40_000
    path = tmp_path / "events" / "run=r" / "rank=0" / "part-0.parquet"
    path.parent.mkdir(parents=True)
    text = [f'{{"External id": {i}, "Input Dims": [[{i % 97}, {i % 13}]], "name": "op{i % 31}"}}' for i in range(rows)]
    pq.write_table(pa.table({"args": pa.array(text)}), path, row_group_size=2_000, compression="lz4")
    # WHEN it is read file by file, Arrow's allocations counted by a pool of their own
    with arrow_counted() as pool:
        # the analyses' read: some columns narrowed (``run`` here)
        read = part_files.read_parts([part_files.Part(str(path), "r", 0)], pa.schema([("args", pa.string())]), 1,
                                     narrowed=("run",))  # fmt: skip
    # THEN the text comes in one chunk per row group, every value the one written, and the read's
    # peak stays within a quarter of what it keeps (72 bytes a row against 67; 117 while the
    # column was read whole: the reader doubles its buffers over all its rows)
    assert read is not None
    assert read.column("args").num_chunks == 20
    assert read.column("args").to_pylist() == text
    assert pool.max_memory() < 1.25 * read.nbytes
    # AND another reader (the viewer, diff, a notebook) gets it in one chunk, where a take of a few
    # rows does not join every chunk first
    plain = part_files.read_parts([part_files.Part(str(path), "r", 0)], pa.schema([("args", pa.string())]), 1)
    assert plain is not None and plain.column("args").num_chunks == 1


def test_every_table_not_partitioned_reads_as_the_scan_gives_it(dlrm: Dataset) -> None:
    for name, declared in TABLES_BY_NAME.items():
        if declared.partitioned:
            continue
        found, files = dlrm.table(name), [str(path) for path in dlrm.parts(name)]
        scanned = pads.dataset(files, format="parquet", schema=declared.full_schema()).to_table() if files else None
        assert scanned is None or (found.schema == scanned.schema and found.equals(scanned)), name


def test_parts_are_read_from_their_plain_paths_as_the_dataset_reads_them(dlrm: Dataset) -> None:
    files = [str(path) for path in dlrm.parts("events")]
    base = str(dlrm.path / "events")
    source = pads.dataset(files, format="parquet", partitioning=pads.partitioning(PARTITIONING, flavor="hive"),
                          partition_base_dir=base, schema=TABLES_BY_NAME["events"].full_schema())  # fmt: skip
    for run in (None, "prof", "no such run"):
        assert part_files.plain_parts(files, base, run) == part_files.parts_of(source, run)


@pytest.mark.parametrize(
    "folders",
    ["run=a%20b/rank=0", "run=__HIVE_DEFAULT_PARTITION__/rank=0", "run=a/rank=01", "run=a/rank=x", "run=a", "a/rank=0"],
)
def test_a_path_the_partitioning_might_read_otherwise_is_left_to_the_dataset(folders: str) -> None:
    # a URI escape, a null, a rank spelled otherwise, another layout: the dataset parses those
    assert part_files.plain_parts([f"/d/events/{folders}/part-0.parquet"], "/d/events", None) is None
    assert part_files.plain_parts(["/d/events/run=a.b-c_1/rank=-3/part-0.parquet"], "/d/events", None) == [
        part_files.Part("/d/events/run=a.b-c_1/rank=-3/part-0.parquet", "a.b-c_1", -3)
    ]


def _with_allocations(root: Path) -> Dataset:
    """A step whose op allocates and frees device memory ([memory] instants, as profile_memory records)."""
    from kinetoscope.ingest import IngestOptions, ingest

    from ..ingest.helpers import HOST_PID, annotated_step, write_session

    memory = {"ph": "i", "name": "[memory]", "cat": "cpu_instant_event", "pid": HOST_PID, "tid": 1, "s": "t"}
    device = {"Device Type": 1, "Device Id": 0, "Total Allocated": 4096, "Total Reserved": 8192}
    instants = [{**memory, "ts": 5 + i, "args": {**device, "Addr": 77, "Bytes": n}} for i, n in enumerate((512, -512))]
    write_session(root / "prof", [*annotated_step(), *instants])
    assert ingest(IngestOptions(profile_dir=root / "prof", out=root / "ds")).status == "ok"
    return Dataset(root / "ds")


def test_the_narrowed_args_leave_out_the_text_of_the_allocator_instants_only(tmp_path: Path) -> None:
    # GIVEN a dataset whose events hold allocator instants; WHEN the analyses' narrowed read asks for args
    dataset = _with_allocations(tmp_path)
    whole = dataset.table("events", ["kind", "args"])
    narrowed = dataset.table("events", ["kind", "args"], narrowed=("args",))
    # THEN those rows' args come null, every other row's as written
    allocation = pc.equal(whole.column("kind").cast(pa.string()), "allocation").to_pylist()
    assert sum(allocation) == 2 and whole.column("args").null_count == 0
    texts = whole.column("args").to_pylist()
    assert narrowed.column("args").to_pylist() == [None if a else t for a, t in zip(allocation, texts, strict=True)]
