"""How often the viewer reads each Parquet part while it builds its index and serves the first page
(``/api/meta``, then the whole run's window and counters): once.

The bound fails when a change adds a pass over a part: a second query over ``events``, or a view
bound again on a connection that has not kept the part's footer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import queries
from kinetoscope.viewer.querying.window import WindowRequest, query_window

from .parts_read import PartReads, counting_parts

MOST_PASSES_PER_PART = 1


def _first_page(index: ViewerIndex) -> None:
    meta = queries.meta(index)
    tracks = tuple(int(t["id"]) for t in meta["tracks"])
    query_window(index, WindowRequest(start_ns=0, end_ns=index.span_ns, width_px=1800, tracks=tracks))
    queries.counter_window(index, 0, index.span_ns, 1800, [int(c["id"]) for c in meta["counters"]])


def _reads(monkeypatch: pytest.MonkeyPatch, dataset: Path, logs: Path) -> PartReads:
    with counting_parts(monkeypatch, dataset, logs) as reads:
        index = ViewerIndex.open(Dataset(dataset))
        _first_page(index)
        index.close()
    return reads


@pytest.fixture
def dataset(multirank_dir: Path, tmp_path: Path) -> Path:
    """A copy of the shared dataset without its index, so this test builds one."""
    return Path(shutil.copytree(multirank_dir, tmp_path / "ds", ignore=shutil.ignore_patterns("_viewer")))


def test_index_and_first_page_read_each_part_once(dataset: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _reads(monkeypatch, dataset, tmp_path / "logs")
    assert len(reads.passes("events")) == 4  # one part per rank, each read: the log sees DuckDB's reads
    assert all(read > 0 for read in reads.beyond_footer("events").values())
    assert max(reads.passes().values()) <= MOST_PASSES_PER_PART, reads.passes()


def test_an_index_already_built_reads_no_events_part(dataset: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ViewerIndex.open(Dataset(dataset)).close()
    reads = _reads(monkeypatch, dataset, tmp_path / "logs")
    assert set(reads.beyond_footer("events").values()) == {0}  # the footers only, for the view
