"""``summary --json`` against its published, versioned schema (docs/summary.schema.json): every
analysis's rows with their columns and types. The schema is checked against what the analyses give
on the 8-rank DLRM set, so that a change of shape (a column added, removed or retyped, an analysis
added) fails here until the schema is rewritten (KINETOSCOPE_UPDATE_SCHEMA=1) with its version bumped."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinetoscope.analysis import ANALYSES, needed_columns, prepared
from kinetoscope.cli import main
from kinetoscope.render.summary_json import SCHEMA_NAME, SCHEMA_VERSION
from kinetoscope.report.opening import open_dataset

from ..conftest import REPO
from ..ingest.helpers import ingested_scenario
from ..json_schema import validate

SCHEMA_PATH = REPO / "docs" / "summary.schema.json"
FINDINGS_SCHEMA = json.loads((REPO / "docs" / "findings.schema.json").read_text())


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_scenario("dlrm_8rank", tmp_path_factory.mktemp("summary-json"))


def json_type(kind: pa.DataType) -> str:
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_floating(kind):
        return "number"
    if pa.types.is_dictionary(kind):
        return json_type(kind.value_type)
    assert pa.types.is_string(kind) or pa.types.is_large_string(kind), kind
    return "string"


def analysis_schema(table: pa.Table) -> dict[str, Any]:
    columns = {f.name: {"type": [json_type(f.type), "null"]} for f in table.schema}
    row = {"type": "object", "required": list(columns), "additionalProperties": False, "properties": columns}
    return {
        "type": "object",
        "required": ["title", "description", "rows"],
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string"},
            "description": {"type": "string"},
            "rows": {"type": "array", "items": row},
        },
    }


def written_schema(analyses: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The schema as it is published: its header, and each analysis's rows from the analyses themselves."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_NAME}/{SCHEMA_VERSION}",
        "title": f"kinetoscope summary, version {SCHEMA_VERSION}",
        "description": (
            "Output of `kinetoscope summary --json`: `findings` (absent under --only) is the findings document "
            "(docs/findings.schema.json); `analyses` holds each analysis run, by name, with its rows. Times are ns "
            "(`*_ns`; `*ts_ns` are epoch ns), sizes bytes (`*_bytes`), shares percentages (`*_pct`); a value that "
            "does not apply is null. A change of shape (a column or an analysis added, removed or retyped) bumps "
            "the version."
        ),
        "type": "object",
        "required": ["schema", "version", "analyses"],
        "additionalProperties": False,
        "properties": {
            "schema": {"const": SCHEMA_NAME},
            "version": {"const": SCHEMA_VERSION},
            "findings": {"type": "object", "description": "docs/findings.schema.json"},
            "analyses": {"type": "object", "additionalProperties": False, "properties": analyses},
        },
    }


def dumped(value: Any, indent: str = "") -> str:
    """``value`` as JSON, an object or array on one line where it fits in 110 characters (a list of
    names always)."""
    flat = json.dumps(value)
    names = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if len(indent) + len(flat) <= 110 or names or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + " "
    if isinstance(value, list):
        return "[\n" + ",\n".join(inner + dumped(v, inner) for v in value) + "\n" + indent + "]"
    items = (f"{inner}{json.dumps(k)}: {dumped(v, inner)}" for k, v in value.items())
    return "{\n" + ",\n".join(items) + "\n" + indent + "}"


def test_the_published_schema_is_the_analyses_shape(dataset: Path) -> None:
    with open_dataset(dataset) as opened:
        tables = prepared(opened.load(needed_columns(ANALYSES)))
    found = written_schema({a.name: analysis_schema(a(tables)) for a in ANALYSES})
    published = json.loads(SCHEMA_PATH.read_text())
    if os.environ.get("KINETOSCOPE_UPDATE_SCHEMA") == "1" and found != published:
        assert published.get("$id") != found["$id"], "the shape changed: bump render/summary_json.SCHEMA_VERSION first"
        SCHEMA_PATH.write_text(dumped(found) + "\n")
        published = found
    assert found == published, "summary --json changed shape: bump SCHEMA_VERSION, KINETOSCOPE_UPDATE_SCHEMA=1"


def test_summary_json_matches_its_schema(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["summary", str(dataset), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    schema = json.loads(SCHEMA_PATH.read_text())
    validate(document, schema)
    validate(document["findings"], FINDINGS_SCHEMA)
    assert list(document) == ["schema", "version", "findings", "analyses"]
    assert set(document["analyses"]) == {a.name for a in ANALYSES}
    assert main(["summary", str(dataset), "--json", "--only", "stragglers"]) == 0
    only = json.loads(capsys.readouterr().out)
    validate(only, schema)
    assert "findings" not in only and list(only["analyses"]) == ["stragglers"]
    with pytest.raises(AssertionError):  # the validator does reject a row that lacks a column
        validate(
            {**only, "analyses": {"stragglers": {**only["analyses"]["stragglers"], "rows": [{"rank": 0}]}}}, schema
        )


@pytest.mark.parametrize(
    "golden", sorted((REPO / "tests" / "cli" / "summary_golden").glob("*.json")), ids=lambda p: p.stem
)
def test_every_golden_summary_matches_the_schemas(golden: Path) -> None:
    # the golden documents of real traces (a CPU gloo rank, a CUDA AlexNet step, DLRM) and a generated set
    document = json.loads(golden.read_text())
    validate(document, json.loads(SCHEMA_PATH.read_text()))
    validate(document["findings"], FINDINGS_SCHEMA)
