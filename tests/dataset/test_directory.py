"""The dataset manifest read with every field checked: a damaged or hostile ``_dataset.json`` is a
FormatError naming the file and the field, never a Python error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinetoscope import FormatError
from kinetoscope.cli import main
from kinetoscope.dataset import directory
from kinetoscope.dataset.schema import SCHEMA_VERSION

RECORD = {"run": "r", "rank": 0, "session": "s", "fingerprint": "f", "parts": [], "status": "ok"}


def _manifest(**fields: object) -> dict[str, object]:
    return {"schema_version": SCHEMA_VERSION, "runs": ["r"], "created_by": "t", "sessions": {"k": RECORD}} | fields


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than it can be read"),  # past any recursion limit
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested deeper than it can be read"),
        (json.dumps([1]), "expected an object, found list"),
        (json.dumps(_manifest(schema_version="3")), "schema_version is '3', not an int"),
        (json.dumps(_manifest(runs="r")), "runs must be a list of strings"),
        (json.dumps(_manifest(sessions=[])), "sessions is [], not a dict"),
        (json.dumps(_manifest(sessions={"k": 5})), "sessions['k'] is int, not an object"),
        (json.dumps(_manifest(sessions={"k": RECORD | {"rank": "0"}})), "sessions['k'].rank is '0', not an int"),
        (json.dumps(_manifest(sessions={"k": RECORD | {"rank": 1e400}})).replace("Infinity", "1e400"),
         "sessions['k'].rank is inf, not an int"),
        (json.dumps(_manifest(sessions={"k": {"run": "r"}})), "sessions['k'].rank is None, not an int"),
        (json.dumps(_manifest(sessions={"k": RECORD | {"parts": [1]}})), "sessions['k'].parts must be a list"),
        (json.dumps(_manifest(sessions={"k": RECORD | {"part_checks": {"a": 1}}})), "part_checks must map"),
        (json.dumps(_manifest(sessions={"k": RECORD | {"extra": 1}})), None),
        ("\xff\xfe{", "not a kinetoscope dataset manifest"),
    ],
    ids=["nested-list", "nested-object", "list", "version-str", "runs-str", "sessions-list", "record-int",
         "rank-str", "rank-inf", "record-partial", "parts-ints", "checks-ints", "unknown-field", "not-utf8"],
)  # fmt: skip
def test_a_damaged_manifest_is_refused_naming_the_field(text: str, fault: str | None, tmp_path: Path) -> None:
    (tmp_path / directory.MANIFEST).write_bytes(text.encode("utf-8", "surrogateescape"))
    if fault is None:  # a field this version does not know is left out, as before
        assert list(directory.load_manifest(tmp_path).sessions) == ["k"]
        return
    with pytest.raises(FormatError) as caught:
        directory.load_manifest(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / directory.MANIFEST}: not a kinetoscope dataset manifest")
    assert fault in str(caught.value)


def test_sql_on_a_dataset_whose_manifest_nests_too_deep_exits_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / directory.MANIFEST).write_text("[" * 100_000 + "]" * 100_000)
    assert main(["sql", str(tmp_path), "SELECT 1 AS n"]) == 2
    err = capsys.readouterr().err
    assert "nested deeper" in err and "Traceback" not in err


def test_a_damaged_manifest_on_a_store_is_named_by_its_url(tmp_path: Path) -> None:
    from kinetoscope.ingest import IngestOptions, ingest
    from kinetoscope.report.opening import open_dataset

    from ..ingest.helpers import annotated_step, write_session

    write_session(tmp_path / "prof", annotated_step())
    url = f"file://{tmp_path / 'remote'}"
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=url, run="prof", jobs=1))
    (tmp_path / "remote" / directory.MANIFEST).write_text('{"schema_version": "x"}')
    for attempt in (lambda: open_dataset(url), lambda: ingest(IngestOptions(tmp_path / "prof", url, run="prof"))):
        with pytest.raises(FormatError) as caught:
            attempt()
        assert str(caught.value).startswith(f"{url}/{directory.MANIFEST}: not a kinetoscope dataset manifest")


def test_parts_are_written_with_lz4_and_no_statistics_of_strings(tmp_path: Path) -> None:
    """lz4, and min/max statistics for every column but the strings (nothing reads those of the
    args text, names and categories, and computing them costs a fifth of writing the events)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "name": pa.array(["a", "b", "a"]).dictionary_encode(),
            "args": pa.array(["{}", '{"x":1}', "{}"]),
        }
    )
    path = tmp_path / "part.parquet"
    directory.write_part(path, table)
    group = pq.ParquetFile(path).metadata.row_group(0)
    columns = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    assert {c.compression for c in columns.values()} == {"LZ4"}  # Parquet's LZ4_RAW, as Arrow names it
    assert columns["id"].is_stats_set
    assert not columns["name"].is_stats_set
    assert not columns["args"].is_stats_set
    assert pq.read_table(path).column("args").to_pylist() == ["{}", '{"x":1}', "{}"]
