"""Findings on public GPU traces (tests/data), imported and ingested as a user would, and the
findings command's JSON checked against its published schema (docs/findings.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main

from ..conftest import REPO
from ..json_schema import validate

DATA = REPO / "tests" / "data"
SCHEMA = json.loads((REPO / "docs" / "findings.schema.json").read_text())


def findings_json(trace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["import", str(DATA / trace), "--out", str(tmp_path / "prof")]) == 0
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 0
    capsys.readouterr()
    assert main(["findings", str(tmp_path / "ds"), "--json", *extra]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    validate(document, SCHEMA)
    return document


def by_rule(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["rule"]: f for f in document["findings"]}


def test_alexnet_first_iteration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A first (cold) AlexNet iteration: cuDNN setup and cudaFree/cudaMalloc between kernels, inputs
    # copied from pageable memory, one cudaStreamSynchronize per copy
    document = findings_json("import-cuda-alexnet", tmp_path, capsys)
    found = by_rule(document)
    assert set(found) == {"gpu_idle_host_bound", "allocator_thrash", "pageable_copy", "sync_in_step"}
    assert document["findings"][0]["rule"] == "gpu_idle_host_bound"  # ranked by gain
    assert found["gpu_idle_host_bound"]["seen"]["idle_pct_of_span"] > 99
    assert found["allocator_thrash"]["seen"]["calls"] == 40
    assert found["pageable_copy"]["seen"] == {**found["pageable_copy"]["seen"], "copies": 16, "bytes": 244403360}
    sync = found["sync_in_step"]["seen"]
    assert {c["name"]: c["count"] for c in sync["calls_by_name"]} == {
        "cudaStreamSynchronize": 16,
        "cudaDeviceSynchronize": 5,
    }
    assert {"name": "aten::copy_", "ns": 559000, "count": 16} in sync["caused_by_op"]


def test_dlrm_ranks_are_launch_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Eight DLRM ranks: ~250 kernels per step, nine in ten under 10 µs; the device idles 16-33% of the
    # span in gaps under 50 µs, so six ranks pass the 20% threshold (ranks 1 and 3 idle 15.9% and 17.3%)
    document = findings_json("dlrm_8rank", tmp_path, capsys)
    launch = [f for f in document["findings"] if f["rule"] == "launch_bound"]
    assert sorted(f["rank"] for f in launch) == [0, 2, 4, 5, 6, 7]
    assert all(f["seen"]["short_kernel_pct"] > 85 and f["seen"]["kernels_per_step"] > 240 for f in launch)
    assert all(f["gain"]["ns"] == f["seen"]["launch_call_ns"] for f in launch)  # launch time < short-gap idle
    # and every rank's collectives run almost entirely alone (under 10% overlapped), SendRecv kernels first
    comm = [f for f in document["findings"] if f["rule"] == "comm_not_overlapped"]
    assert sorted(f["rank"] for f in comm) == list(range(8))
    assert all(f["seen"]["overlap_pct"] < 10 and f["seen"]["collectives"][0]["name"].startswith("nccl") for f in comm)
    lost = [f for f in document["findings"] if f["rule"] == "lost_data"]
    assert all(f["severity"] == "info" and f["seen"]["launched_before_window"] > 0 for f in lost) and lost


def test_dlrm_straggler_is_the_rank_the_others_wait_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Rank 7 arrives last at 5 of the 8 NCCL collectives (7.624 ms late at the first all-to-all) and
    # waits 1.529 ms in them; the other seven wait a median 6.024 ms in those five. The stragglers
    # analysis (least collective time: rank 7's 1.746 ms) names the same rank.
    document = findings_json("dlrm_8rank", tmp_path, capsys)
    (found,) = [f for f in document["findings"] if f["rule"] == "straggler"]
    assert found["rank"] == 7 and found["seen"]["by"] == "arrival"
    assert (found["seen"]["arrived_last"], found["seen"]["instances"]) == (5, 8)
    assert found["seen"]["straggler_wait_ns"] == 1_529_000
    assert found["seen"]["others_median_wait_ns"] == 6_034_000
    assert found["seen"]["held_up"][0] == {"collective": "sendrecv #0 of step 10 by order", "late_ns": 7_624_000,
                                           "others_wait_ns": 26_436_000}  # fmt: skip
    assert found["gain"]["ns"] == 6_024_000
    assert found["evidence"][0]["name"].startswith("ncclKernel_SendRecv")
    assert main(["summary", str(tmp_path / "ds"), "--only", "stragglers", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["analyses"]["stragglers"]["rows"]
    assert [r["rank"] for r in rows if r["straggler"]] == [7]


def test_gloo_all_reduce_on_a_cpu_rank_is_exposed_communication(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A CPU-only rank of a gloo job: host collectives against the other threads' ops, none overlapped
    (comm,) = findings_json("import-cpu-gloo", tmp_path, capsys)["findings"]
    assert comm["rule"] == "comm_not_overlapped" and comm["rank"] == 34
    assert comm["seen"]["overlap_pct"] == 0.0 and comm["seen"]["collectives"][0]["name"] == "gloo:all_reduce"


def test_thresholds_and_fail_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN the multi-stream trace: a host-bound idle device and three cudaMalloc calls
    document = findings_json("import-cuda-multi-stream", tmp_path, capsys)
    assert set(by_rule(document)) == {"gpu_idle_host_bound", "allocator_thrash"}
    dataset = str(tmp_path / "ds")
    # WHEN a threshold is raised, its rule goes quiet
    assert main(["findings", dataset, "--json", "--set", "allocator_thrash.min_calls=4"]) == 0
    assert set(by_rule(json.loads(capsys.readouterr().out))) == {"gpu_idle_host_bound"}
    # THEN --fail-on gates on severity (the idle gaps are high), and a bad override is refused
    assert main(["findings", dataset, "--fail-on", "high"]) == 1
    assert main(["findings", dataset, "--fail-on", "high", "--rules", "allocator_thrash"]) == 0
    assert main(["findings", dataset, "--set", "allocator_thrash.nope=1"]) != 0
    capsys.readouterr()
    # AND each deep link frames its evidence in the viewer's times (ns from the dataset's first event)
    from kinetoscope.report.opening import open_dataset

    with open_dataset(tmp_path / "ds") as ds:
        t0_ns = ds.sql("SELECT min(ts_ns) AS t0 FROM events").column("t0").to_pylist()[0]
    for evidence in (e for f in document["findings"] for e in f["evidence"]):
        link = dict(part.split("=") for part in evidence["link"].lstrip("?").split("&"))
        assert int(link["start"]) <= evidence["start_ns"] - t0_ns <= evidence["end_ns"] - t0_ns <= int(link["end"])
        assert link["sel"] == str(evidence["event_id"]) and link["page"] == "timeline"
    with pytest.raises(AssertionError):  # the validator does reject what the schema forbids
        validate({**document, "version": 1}, SCHEMA)


PUBLIC = REPO.parent / "shared" / "datasets" / "public-traces"
RESNET_WORKERS_0 = PUBLIC / "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


@pytest.mark.skipif(not RESNET_WORKERS_0.exists(), reason="public trace corpus not present")
def test_resnet50_with_a_single_process_dataloader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The TensorBoard plugin's sample of a DataLoader with num_workers=0: the GPU waits on data loading
    assert main(["import", str(RESNET_WORKERS_0), "--out", str(tmp_path / "prof")]) == 0
    capsys.readouterr()
    assert main(["findings", str(tmp_path / "prof"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    validate(document, SCHEMA)
    idle = by_rule(document)["gpu_idle_host_bound"]
    # the cause first: 6 batches in __next__, 415,791 µs of the steps' 1,048,976 µs (summed from the JSON),
    # ranked by the part of it the device sat idle through; the idle gaps it leaves next
    assert [f["rule"] for f in document["findings"][:2]] == ["data_loader_bound", "gpu_idle_host_bound"]
    loader = by_rule(document)["data_loader_bound"]["seen"]
    assert loader == {**loader, "batches": 6, "loader_ns": 415_791_000, "step_ns": 1_048_976_000}
    assert loader["single_process"] and 0 < loader["device_idle_during_loader_ns"] <= loader["loader_ns"]
    top = idle["seen"]["host_during_gaps"][0]
    assert top["name"] == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert top["ns"] > 0.8 * idle["seen"]["idle_ns"] and idle["seen"]["idle_pct_of_span"] > 30
    assert "launch_bound" not in by_rule(document)  # its idle time is in long gaps, not launch latency


def test_summary_starts_with_the_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    findings_json("import-cuda-multi-stream", tmp_path, capsys)
    assert main(["summary", str(tmp_path / "ds")]) == 0
    text = capsys.readouterr().out
    assert "\n\nFindings (2, largest estimated gain first)\n1. [" in text  # after what ran, before the tables
    assert text.index("Findings") < text.index("Top kernels")
    assert main(["summary", str(tmp_path / "ds"), "--all"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Findings (2, largest estimated gain first)") and "Per rank" in text
    assert main(["summary", str(tmp_path / "ds"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    validate(document["findings"], SCHEMA)
    assert "overview" in document["analyses"]
    assert main(["summary", str(tmp_path / "ds"), "--only", "top_ops"]) == 0
    assert "Findings" not in capsys.readouterr().out
