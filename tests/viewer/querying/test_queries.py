"""The flows API's order: at each hop, the runtime calls that launched device work come first, so
that `]` follows the work on real traces (the public DLRM set has 0 ns occupancy queries before the
launch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..helpers import running_server
from ..test_browser import api, imported_dlrm  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow


def _first_hop(chain: dict[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    hop1 = [b for b in chain["downstream"] if b["hop"] == 1]
    launches = {e["src"] for e in chain["edges"] if e["kind"] == "runtime_device"}
    return hop1, launches


def test_calls_that_launched_device_work_come_first(imported_dlrm: Path) -> None:  # noqa: F811
    with running_server(ViewerIndex.open(Dataset(imported_dlrm))) as url:
        hits = api(url, "/api/search?q=aten%3A%3Amm&limit=300")["hits"]
        mixed = []
        for hit in hits:
            hop1, launches = _first_hop(api(url, f"/api/flows/{hit['id']}"))
            idle = [b for b in hop1 if b["id"] not in launches]
            working = [b for b in hop1 if b["id"] in launches]
            if idle and working and min(b["ts"] for b in idle) < min(b["ts"] for b in working):
                mixed.append(hop1[0]["id"] in launches)
    assert mixed and all(mixed)  # an earlier call without device work is not the first hop
