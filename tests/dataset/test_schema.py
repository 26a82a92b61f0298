"""The table declarations: documented, generated page current, schema table complete."""

from __future__ import annotations

from kinetoscope.dataset.schema import EVENTS, PARTITIONED, SCHEMA_VERSION, TABLES, render_markdown, schema_table

from ..conftest import REPO


def test_docs_tables_md_is_generated_from_the_declarations() -> None:
    # GIVEN the declarations WHEN the page is rendered THEN docs/tables.md is exactly that text
    page = (REPO / "docs" / "tables.md").read_text()
    assert page == render_markdown(), "run: PYTHONPATH=src python -m kinetoscope.dataset.schema > docs/tables.md"


def test_every_column_is_described_and_every_table_has_run_and_rank() -> None:
    for table in TABLES:
        assert table.description
        for column in table.columns:
            assert column.description.strip(), f"{table.name}.{column.name}"
        if table.name != "schema":
            assert table.column_names()[:2] == ["run", "rank"]


def test_partitioned_files_leave_run_and_rank_to_the_path() -> None:
    for table in PARTITIONED:
        assert "run" not in table.file_schema().names
        assert "rank" not in table.file_schema().names
        assert table.file_schema().metadata[b"kinetoscope.schema_version"] == str(SCHEMA_VERSION).encode()


def test_schema_table_lists_every_column_with_its_unit() -> None:
    rows = schema_table().to_pylist()
    assert len(rows) == sum(len(t.columns) for t in TABLES)
    ts = next(r for r in rows if r["table"] == "events" and r["column"] == "ts_ns")
    assert ts["unit"] == "ns"
    assert {c.name for c in EVENTS.columns} >= {
        "id",
        "layer",
        "name",
        "category",
        "ts_ns",
        "dur_ns",
        "correlation",
        "external_id",
        "stack_id",
        "depth",
        "args",
    }
