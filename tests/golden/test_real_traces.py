"""Real traces imported, ingested and analysed: counts match the input, figures match HTA's.

The DLRM figures below are what Holistic Trace Analysis 0.5.0 reports on the same eight files
(``benchmarks/hta_truth.py`` recomputes them side by side when HTA is installed).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..ingest.helpers import DATA, import_scenario, ingested_scenario

HTA_IDLE_US = [6419, 6428, 7046, 8145, 8887, 9121, 7051, 8308]
HTA_COMPUTE_PCT = [7.95, 6.65, 9.41, 6.58, 6.79, 6.35, 9.21, 9.66]
HTA_OVERLAP_PCT = [4.50, 2.47, 7.88, 3.31, 0.56, 0.64, 7.56, 9.51]
HTA_KERNEL_TYPES_US = {
    "COMMUNICATION": 46880,
    "COMPUTATION": 7213,
    "COMPUTATION overlapping COMMUNICATION": 1652,
    "MEMORY": 159,
    "COMMUNICATION overlapping MEMORY": 10,
}


def _raw_events(scenario: str) -> list[list[dict]]:
    return [json.loads(gzip.open(p).read())["traceEvents"] for p in sorted((DATA / scenario).glob("*.json.gz"))]


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_scenario("dlrm_8rank", tmp_path_factory.mktemp("dlrm"))


def _tables(dataset: Path, *names: str) -> dict:
    with open_dataset(dataset) as ds:
        return ds.load(needed_columns(tuple(ANALYSES_BY_NAME[n] for n in names)))


def test_dlrm_every_event_and_launch_flow_arrives(dlrm: Path) -> None:
    raw = _raw_events("dlrm_8rank")
    with open_dataset(dlrm) as ds:
        per_rank = {
            r["rank"]: r["n"] for r in ds.sql("SELECT rank, count(*) AS n FROM events GROUP BY rank").to_pylist()
        }
        launches = {
            r["rank"]: r["n"]
            for r in ds.sql(
                "SELECT rank, count(*) AS n FROM flows WHERE kind = 'runtime_device' GROUP BY rank"
            ).to_pylist()
        }
    for rank, events in enumerate(raw):
        slices = [
            e
            for e in events
            if e.get("ph") in ("X", "i") and e.get("cat") != "Trace" and not isinstance(e.get("pid"), str)
        ]
        assert per_rank[rank] == len(slices)
        assert launches[rank] == sum(1 for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g")


def test_dlrm_device_time_matches_hta(dlrm: Path) -> None:
    tables = _tables(dlrm, "temporal_breakdown", "kernel_type_breakdown", "communication_overlap")
    temporal = ANALYSES_BY_NAME["temporal_breakdown"](tables).to_pylist()
    assert [round(r["idle_ns"] / 1000) for r in temporal] == HTA_IDLE_US
    assert [r["compute_pct"] for r in temporal] == HTA_COMPUTE_PCT
    overlap = ANALYSES_BY_NAME["communication_overlap"](tables).to_pylist()
    assert [r["overlap_pct"] for r in overlap] == HTA_OVERLAP_PCT
    totals = {
        r["kernel_type"]: r["time_ns"] // 1000
        for r in ANALYSES_BY_NAME["kernel_type_breakdown"](tables).to_pylist()
        if r["rank"] == -1
    }
    assert totals == HTA_KERNEL_TYPES_US


def test_dlrm_across_ranks(dlrm: Path) -> None:
    tables = _tables(dlrm, "step_times", "stragglers")
    steps = ANALYSES_BY_NAME["step_times"](tables).to_pylist()
    assert [(s["step"], s["ranks"]) for s in steps] == [(10, 8)]
    stragglers = [r["rank"] for r in ANALYSES_BY_NAME["stragglers"](tables).to_pylist() if r["straggler"]]
    assert stragglers == [7]  # least time waiting in collectives


def test_legacy_format_and_fwdbwd_flows(tmp_path: Path) -> None:
    for scenario in ("legacy_kineto", "amd_fwdbwd"):
        import_scenario(scenario, tmp_path / scenario)
        ingest(IngestOptions(profile_dir=tmp_path / scenario, out=tmp_path / f"{scenario}.ds"))
    with open_dataset(tmp_path / "legacy_kineto.ds") as ds:
        layers = dict(Counter(r["layer"] for r in ds.table("events", ["layer"]).to_pylist()))
        launches = ds.sql("SELECT count(*) AS n FROM flows WHERE kind = 'runtime_device'").to_pylist()[0]["n"]
    raw = _raw_events("legacy_kineto")[0]
    by_cat = Counter(e.get("cat") for e in raw if e.get("ph") == "X")
    assert layers["device"] == by_cat["Kernel"] + by_cat["Memcpy"] + by_cat["Memset"]
    assert layers["runtime"] == by_cat["Runtime"]
    assert launches == sum(1 for e in raw if e.get("ph") == "s" and e.get("cat") == "async")
    with open_dataset(tmp_path / "amd_fwdbwd.ds") as ds:
        fwd_bwd = ds.sql("SELECT count(*) AS n FROM flows WHERE kind = 'fwd_bwd'").to_pylist()[0]["n"]
    raw = _raw_events("amd_fwdbwd")[0]
    assert fwd_bwd == sum(1 for e in raw if e.get("ph") == "s" and e.get("cat") == "fwdbwd")
