"""A damaged viewer index whose fingerprint still matches is rebuilt, at open or when a request finds it."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex, index_path

from ...kineto_gen import TrainingSpec, write_dataset
from ..helpers import running_server
from ..test_api import fetch

BLOCK_BYTES = 256 * 1024  # DuckDB's block size; each block starts with its checksum
HEADER_BYTES = 3 * 4096


def _dataset(tmp_path: Path) -> Dataset:
    return Dataset(write_dataset(tmp_path / "ds", TrainingSpec(ranks=2, steps=3, layers=6)))


def test_an_index_missing_a_table_is_rebuilt_at_open(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    ViewerIndex.open(dataset).close()
    with duckdb.connect(str(index_path(dataset))) as con:  # the fingerprint stays, a table goes
        con.execute("DROP TABLE ev")
    index = ViewerIndex.open(dataset)
    assert index.cursor().execute("SELECT count(*) FROM ev").fetchone() == (index.event_count,)
    index.close()


def test_damage_found_while_serving_rebuilds_the_index(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    index = ViewerIndex.open(dataset)
    path = index_path(dataset)
    with open(path, "r+b") as handle:  # every data block damaged under the open index
        for start in range(HEADER_BYTES + 64, path.stat().st_size, BLOCK_BYTES):
            handle.seek(start)
            handle.write(bytes(b ^ 0x5A for b in handle.read(256)))
            handle.seek(start)
    with running_server(index) as url:
        meta_status, body, _ = fetch(url + "/api/meta")
        assert meta_status == 200, body
        tracks = ",".join(str(track["id"]) for track in json.loads(body)["tracks"])
        status, body, _ = fetch(f"{url}/api/window?start=0&end={index.span_ns}&px=800&tracks={tracks}")
        assert status == 200, body
        assert fetch(url + "/api/search?q=aten")[0] == 200
    assert index.generation == 1  # rebuilt once
    index.close()
