"""Collectives matched across the eight real DLRM ranks: figures counted by hand from the raw
traces, and a clock offset put on one rank on purpose recovered from the collective ends."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns, prepared
from kinetoscope.cli import main
from kinetoscope.importer.trace_import import ImportOptions, import_trace
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..conftest import SHARED
from ..ingest.helpers import DATA, import_scenario

EVERY = TopOptions(top=1_000_000)  # every instance
SHIFT_US = 5_000  # +5 ms on one rank's clock
SHIFTED_RANK = 3


def _ingested(profile: Path, out: Path) -> Path:
    report = ingest(IngestOptions(profile_dir=profile, out=out))
    assert report.status == "ok", [o.message for o in report.outcomes]
    return out


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dlrm")
    return _ingested(import_scenario("dlrm_8rank", root / "prof"), root / "ds")


def _tables(dataset: Path) -> dict:
    chosen = tuple(ANALYSES_BY_NAME[n] for n in ("matched_collectives", "collective_waits", "clock_offsets"))
    with open_dataset(dataset) as ds:
        return prepared(ds.load(needed_columns(chosen)))


def _raw_nccl_kernels() -> dict[int, list[tuple[str, int, int]]]:
    """Rank -> its NCCL kernels (kind, ts µs, dur µs) in time order, read straight from the JSON."""
    found = {}
    for path in sorted((DATA / "dlrm_8rank").glob("*.json.gz")):
        trace = json.loads(gzip.decompress(path.read_bytes()))
        kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("nccl")]
        found[trace["distributedInfo"]["rank"]] = sorted(
            (e["name"].split("_")[1], e["ts"], e["dur"]) for e in kernels if e.get("ph") == "X"
        )
    return found


def test_dlrm_instances_match_a_hand_count(dlrm: Path) -> None:
    raw = _raw_nccl_kernels()
    # by hand: the i-th SendRecv (AllReduce) kernel of every rank is one instance; latency the shortest
    by_kind: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for rank, kernels in raw.items():
        for kind in ("SendRecv", "AllReduce"):
            for i, (_, ts, dur) in enumerate(k for k in kernels if k[0] == kind):
                by_kind.setdefault((kind.lower(), i), []).append((rank, ts, dur))
    found = ANALYSES_BY_NAME["matched_collectives"](_tables(dlrm), EVERY).to_pylist()
    assert len(found) == len(by_kind) == 8  # 5 SendRecv (the all-to-alls) and 3 AllReduce
    for row in found:
        hand = by_kind[(row["collective"], row["number"])]
        first = min(ts for _, ts, _ in hand)
        # these traces carry no Seq: numbered in their order within the one step, ProfilerStep#10
        assert (row["ranks"], row["matched_by"], row["step"]) == (8, "step order", 10)
        assert row["latency_ns"] == 1000 * min(dur for _, _, dur in hand)
        assert row["max_skew_ns"] == 1000 * max(ts - first for _, ts, _ in hand)
        assert row["wait_ns"] == 1000 * sum(dur - min(d for _, _, d in hand) for _, _, dur in hand)
        assert row["size_bytes"] is None and row["busbw_gb_s"] is None  # no message sizes recorded
        ends = [ts + dur for _, ts, dur in hand]
        assert row["end_spread_ns"] == 1000 * (max(ends) - min(ends)) <= 7_000  # all ranks end together
    # golden: the first all-to-all waits for rank 7, 7.624 ms late; ranks wait 26.4 ms in it together
    worst = found[0]
    assert (worst["collective"], worst["number"], worst["last_rank"]) == ("sendrecv", 0, 7)
    assert (worst["latency_ns"], worst["max_skew_ns"], worst["wait_ns"]) == (10_000, 7_624_000, 26_436_000)
    # and each rank's kernel in it, as the raw trace has it
    arrivals = ANALYSES_BY_NAME["collective_arrivals"](_tables(dlrm), TopOptions(top=1)).to_pylist()
    hand = {rank: (ts, dur) for rank, ts, dur in by_kind[("sendrecv", 0)]}
    assert [r["rank"] for r in arrivals] == list(range(8)) and [r["rank"] for r in arrivals if r["last"]] == [7]
    assert all(
        (r["start_ts_ns"], r["dur_ns"]) == (1000 * hand[r["rank"]][0], 1000 * hand[r["rank"]][1]) for r in arrivals
    )
    assert max(r["skew_ns"] for r in arrivals) == 7_624_000 and sum(r["wait_ns"] for r in arrivals) == 26_436_000


def test_dlrm_waits_per_rank(dlrm: Path) -> None:
    waits = {r["rank"]: r for r in ANALYSES_BY_NAME["collective_waits"](_tables(dlrm)).to_pylist()}
    # rank 7 arrives last in 5 of the 8 instances and waits least: 1.529 of its 1.746 ms in NCCL kernels
    assert (waits[7]["collective_ns"], waits[7]["wait_ns"], waits[7]["arrived_last"]) == (1_746_000, 1_529_000, 5)
    assert min(waits, key=lambda r: waits[r]["wait_ns"]) == 7
    # rank 1 waits most: 11.119 ms, 55.73% of its 19.951 ms, 7.625 ms of it in the first all-to-all
    one = waits[1]
    assert (one["wait_ns"], one["wall_ns"], one["wait_pct"]) == (11_119_000, 19_951_000, 55.73)
    assert (one["longest_wait_ns"], one["longest_wait_in"]) == (7_625_000, "sendrecv #0 of step 10 by order")
    assert sum(w["arrived_last"] for w in waits.values()) == 8


def test_dlrm_ranks_share_one_clock(dlrm: Path) -> None:
    offsets = ANALYSES_BY_NAME["clock_offsets"](_tables(dlrm)).to_pylist()
    assert {(r["clock"], r["offset_ns"], r["applied"]) for r in offsets} == {("reference", 0, False)}
    # the kernels of one instance end within 4 µs of the instances' median end on every rank
    assert {r["uncertainty_ns"] for r in offsets} == {4_000}
    assert all(abs(r["measured_ns"]) <= 1_000 for r in offsets)


def _shifted_copy(out: Path) -> Path:
    """The DLRM traces, rank 3 on host node-b with its clock 5 ms ahead, the others on node-a."""
    out.mkdir()
    for path in sorted((DATA / "dlrm_8rank").glob("*.json.gz")):
        trace = json.loads(gzip.decompress(path.read_bytes()))
        rank = trace["distributedInfo"]["rank"]
        trace["host_name"] = "node-b" if rank == SHIFTED_RANK else "node-a"
        if rank == SHIFTED_RANK:
            for event in trace["traceEvents"]:
                if "ts" in event:
                    event["ts"] += SHIFT_US
        (out / path.name.removesuffix(".gz")).write_text(json.dumps(trace))
    return out


@pytest.fixture(scope="module")
def shifted_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shifted")
    for trace in sorted(_shifted_copy(root / "traces").glob("*.json")):
        import_trace(trace, ImportOptions(out_dir=root / "prof"))
    return _ingested(root / "prof", root / "ds")


def test_a_shifted_host_clock_is_recovered(dlrm: Path, shifted_dataset: Path) -> None:
    shifted = _tables(shifted_dataset)
    offsets = {r["rank"]: r for r in ANALYSES_BY_NAME["clock_offsets"](shifted).to_pylist()}
    moved = offsets[SHIFTED_RANK]
    assert (moved["host"], moved["clock"], moved["samples"], moved["applied"]) == ("node-b", "node-b", 8, True)
    assert abs(moved["offset_ns"] - SHIFT_US * 1000) <= moved["uncertainty_ns"] <= 4_000
    assert all(offsets[r]["clock"] == "reference" and not offsets[r]["applied"] for r in offsets if r != SHIFTED_RANK)
    # and the arrival skews, taken on the reference clock, are those of the unshifted traces
    before = ANALYSES_BY_NAME["matched_collectives"](_tables(dlrm), EVERY).to_pylist()
    after = ANALYSES_BY_NAME["matched_collectives"](shifted, EVERY).to_pylist()
    skews = np.asarray([r["max_skew_ns"] for r in after]) - np.asarray([r["max_skew_ns"] for r in before])
    assert np.abs(skews).max() <= moved["uncertainty_ns"]
    assert [r["last_rank"] for r in after] == [r["last_rank"] for r in before]
    assert [r["wait_ns"] for r in after] == [r["wait_ns"] for r in before]  # durations need no clock


def _exported_kernels(dataset: Path, out: Path, *flags: str) -> tuple[dict[str, str], dict[str, list[float]]]:
    """(process name by pid, NCCL kernel starts in µs by process name) of a chrome export."""
    assert main(["export", str(dataset), "-o", str(out), *flags]) == 0
    document = json.loads(out.read_text())
    names = {e["pid"]: e["args"]["name"] for e in document["traceEvents"] if e.get("name") == "process_name"}
    starts: dict[str, list[float]] = {}
    for event in document["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"].startswith("nccl"):
            starts.setdefault(names[event["pid"]], []).append(event["ts"] + document["baseTimeNanoseconds"] / 1000)
    return names, starts


def test_export_aligns_the_shifted_host_and_labels_it(
    dlrm: Path, shifted_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offset = {r["rank"]: r for r in ANALYSES_BY_NAME["clock_offsets"](_tables(shifted_dataset)).to_pylist()}
    estimate_ms = offset[SHIFTED_RANK]["offset_ns"] / 1e6
    _, truth = _exported_kernels(dlrm, tmp_path / "truth.json")
    _, plain = _exported_kernels(shifted_dataset, tmp_path / "plain.json")
    names, aligned = _exported_kernels(shifted_dataset, tmp_path / "aligned.json", "--align-clocks")
    err = capsys.readouterr().err
    assert f"rank {SHIFTED_RANK} (prof): clock shifted by {-estimate_ms:+.3f} ms (± 0.004 ms, 8 samples)" in err
    device = f"rank {SHIFTED_RANK} · device {SHIFTED_RANK}"  # DLRM rank N runs on device N
    label = f"{device} · clock {-estimate_ms:+.3f} ms (aligned)"
    aligned_names = [n for n in names.values() if n.endswith("(aligned)")]  # the rank's host and device processes
    assert label in aligned_names and len(aligned_names) == 2 and all(n.startswith("rank 3 ") for n in aligned_names)
    # without the option the rank's kernels sit 5 ms late; with it, where the unshifted traces have them
    late = np.asarray(plain[device]) - np.asarray(truth[device])
    assert np.allclose(late, SHIFT_US, atol=0.002)
    error_us = np.abs(np.asarray(aligned[label]) - np.asarray(truth[device]))
    assert error_us.max() <= offset[SHIFTED_RANK]["uncertainty_ns"] / 1000
    others = [n for n in truth if not n.startswith(f"rank {SHIFTED_RANK} ")]
    assert all(np.allclose(aligned[n], truth[n], atol=0.002) for n in others)  # the other ranks do not move


def test_collective_rows_alone_give_the_same_offsets_and_the_viewer_serves_them(shifted_dataset: Path) -> None:
    from kinetoscope.query.collective_rows import collective_tables
    from kinetoscope.viewer.indexing.index import ViewerIndex

    from ..viewer.helpers import running_server
    from ..viewer.test_api import api

    whole = ANALYSES_BY_NAME["clock_offsets"](_tables(shifted_dataset)).to_pylist()
    with open_dataset(shifted_dataset) as ds:
        alone = prepared(collective_tables(ds))
        index = ViewerIndex.open(ds)
        assert ANALYSES_BY_NAME["clock_offsets"](alone).to_pylist() == whole
        assert ANALYSES_BY_NAME["matched_collectives"](alone, EVERY) == ANALYSES_BY_NAME[
            "matched_collectives"
        ](_tables(shifted_dataset), EVERY)
        with running_server(index) as url:
            served = api(url, "/api/meta")["clock_offsets"]
    assert served == whole
    assert [r["rank"] for r in served if r["applied"]] == [SHIFTED_RANK]


NCCL_DATA = (
    SHARED / "datasets" / "public-traces" / "hta" / "tests" / "data" / "nccl_parser_config" / "nccl_data.json.gz"
)
BYTES = {"Float": 4, "Long": 8}


def test_real_collective_metadata_gives_sizes_and_bandwidths(tmp_path: Path) -> None:
    # GIVEN HTA's nccl_parser_config trace (rank 0 of 2, NCCL 2.17, metadata on every NCCL kernel)
    # and the same trace as its rank 1
    if not NCCL_DATA.exists():
        pytest.skip("public trace corpus not present")
    trace = json.loads(gzip.decompress(NCCL_DATA.read_bytes()))
    for rank in (0, 1):
        trace["distributedInfo"]["rank"] = rank
        (tmp_path / f"rank{rank}.json").write_text(json.dumps(trace))
        import_trace(tmp_path / f"rank{rank}.json", ImportOptions(out_dir=tmp_path / "prof"))
    found = ANALYSES_BY_NAME["matched_collectives"](_tables(_ingested(tmp_path / "prof", tmp_path / "ds")),
                                                    EVERY).to_pylist()  # fmt: skip
    events = trace["traceEvents"]
    by_name: dict[str, int] = {}
    for event in events:
        if event.get("cat") == "kernel" and "Collective name" in event["args"]:
            by_name[event["args"]["Collective name"]] = by_name.get(event["args"]["Collective name"], 0) + 1
    assert by_name == {"allreduce": 15, "broadcast": 6}
    assert sorted(r["collective"] for r in found) == ["allreduce"] * 15 + ["broadcast"] * 6
    for row in found:
        args = events[row["example_id"] & 0xFFFFFFFF]["args"]  # an event id's low 32 bits: its index in trace.json
        assert args["Collective name"] == row["collective"]
        size = max(args["In msg nelems"], args["Out msg nelems"]) * BYTES[args["dtype"]]
        assert (row["group"], row["group_size"], row["size_bytes"]) == ("0", 2, size)
        assert row["matched_by"] in ("order", "step order")  # no Seq in NCCL 2.17's traces
        # two ranks: allreduce's 2(n-1)/n and broadcast's 1 are both 1, so busbw = algbw = S / latency
        assert row["algbw_gb_s"] == row["busbw_gb_s"] == round(size / row["latency_ns"], 3)
    biggest = max(found, key=lambda r: r["size_bytes"])
    nelems = max(e["args"]["In msg nelems"] for e in events if e.get("args", {}).get("Collective name") == "allreduce")
    assert (biggest["collective"], biggest["size_bytes"]) == ("allreduce", 4 * nelems)


def test_align_clocks_without_collectives_shifts_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a single CPU rank of a gloo job (tests/data/import-cpu-gloo): nothing to match, nothing to align
    profile = import_scenario("import-cpu-gloo", tmp_path / "prof")
    assert main(["export", str(profile), "-o", str(tmp_path / "plain.json")]) == 0
    assert main(["export", str(profile), "-o", str(tmp_path / "aligned.json"), "--align-clocks"]) == 0
    assert "no rank on another host has an estimated offset; nothing shifted" in capsys.readouterr().err
    assert (tmp_path / "aligned.json").read_bytes() == (tmp_path / "plain.json").read_bytes()


def test_the_shifted_host_summarised_rank_by_rank_is_summarised_at_once(
    shifted_dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN rank 3 on another host, its clock 5 ms ahead; WHEN summarised both ways
    documents = []
    for how in ("--by-rank", "--no-by-rank"):
        capsys.readouterr()
        assert main(["summary", str(shifted_dataset), "--json", "--top", "50", how]) == 0
        documents.append(capsys.readouterr().out)
    # THEN the documents are the same, the offset found from every rank's collectives applied in both
    assert documents[0] == documents[1]
    offsets = json.loads(documents[0])["analyses"]["clock_offsets"]["rows"]
    assert [row["rank"] for row in offsets if row["applied"]] == [SHIFTED_RANK]
