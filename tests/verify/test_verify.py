"""verify: each check finds what it is for, on sessions built to have exactly that problem."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.format.kineto import event_stream
from kinetoscope.format.perfetto_packets.packets import frame
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.verify.report import verify

from ..ingest.helpers import kernel, write_session, x


def _checks(root: Path) -> set[str]:
    return {f.check for f in verify(root).all_findings()}


def test_a_clean_session_passes(tmp_path: Path) -> None:
    write_session(tmp_path, [x("aten::mm", 0, 10)])
    report = verify(tmp_path)
    assert report.status == "ok" and report.exit_code == 0
    assert [f for f in report.all_findings() if f.severity != "note"] == []


def test_empty_directory_is_unusable(tmp_path: Path) -> None:
    report = verify(tmp_path)
    assert report.exit_code == 2
    assert report.findings[0].check == "no_sessions" and "export_trace" in report.findings[0].remedy


def test_a_path_that_does_not_exist_is_named_as_such(tmp_path: Path) -> None:
    assert verify(tmp_path / "nope").findings[0].message == "no such file or directory"
    (tmp_path / "file").write_text("x")
    assert verify(tmp_path / "file").findings[0].message == "not a directory"


def test_damaged_metadata_is_not_blamed_on_an_unfinished_export(tmp_path: Path) -> None:
    session = write_session(tmp_path, [x("op", 0, 1)])
    (session / layout.TRACE_INFO).write_bytes(b"\xff" * 40)
    finding = next(f for f in verify(tmp_path).all_findings() if f.check == "metadata")
    assert "damaged" in finding.remedy and "did not finish" not in finding.remedy
    (session / layout.TRACE_INFO).unlink()
    (session / "host_mem.pb").write_bytes(b"")  # keeps the session discoverable without its metadata
    finding = next(f for f in verify(tmp_path).all_findings() if f.check == "metadata")
    assert "did not finish" in finding.remedy


def test_missing_truncated_and_altered_files(tmp_path: Path) -> None:
    def listed(info: object) -> None:
        info.files.add(name="cpu_util.pb", size_bytes=10, sha256="00")  # type: ignore[attr-defined]
        info.config.modes.append(ti.Mode.MODE_HOST_MEMORY)  # type: ignore[attr-defined]

    session = write_session(tmp_path, [x("op", 0, 1)], edit=listed)
    (session / layout.SYSTEM_TRACE).write_bytes(frame(b"\x08\x01") + b"\x0a\x05ab")  # one packet, then a cut
    (session / "empty.pb").write_bytes(b"")
    checks = _checks(tmp_path)
    assert {"missing_file", "truncated", "empty_file"} <= checks
    assert verify(tmp_path).exit_code == 1


def test_trace_missing_points_to_a_stray_trace(tmp_path: Path) -> None:
    session = write_session(tmp_path, [x("op", 0, 1)])
    (session / layout.TRACE_JSON).rename(session.parent / "worker0.pt.trace.json")
    report = verify(tmp_path)
    finding = next(f for f in report.all_findings() if f.check == "no_trace")
    assert "worker0.pt.trace.json" in finding.remedy
    assert report.exit_code == 2


def test_drops_no_synchronize_and_no_warmup(tmp_path: Path) -> None:
    def dropped(info: object) -> None:
        info.drops.add(device=0, kept=900, total=1000)  # type: ignore[attr-defined]
        info.stop_clocks.realtime_ns = info.start_clocks.realtime_ns + 100_000  # type: ignore[attr-defined]

    events = [
        x("_compile.compile_inner (dynamo_timed)", 0, 80, cat="user_annotation"),
        x("aten::mm", 85, 10),
        kernel("gemm", 90, 5_000, correlation=1),  # ends ~5 ms after the stop at 100 µs
    ]
    write_session(tmp_path, events, edit=dropped)
    findings = {f.check: f for f in verify(tmp_path).all_findings()}
    assert "kept 900 of 1000" in findings["dropped_events"].message
    assert "max_events_per_device" in findings["dropped_events"].remedy
    assert "synchronize" in findings["no_synchronize"].remedy
    assert "warm-up" in findings["no_warmup"].remedy


def test_snapshot_without_rank_and_duplicate_ranks(tmp_path: Path) -> None:
    session = write_session(tmp_path, [x("op", 0, 1)], world_size=2, pid=1)
    (session / "memory_snapshot.pickle").write_bytes(pickle.dumps({"segments": [], "device_traces": []}))
    write_session(tmp_path, [x("op", 0, 1)], world_size=2, pid=2)  # also rank 0
    checks = _checks(tmp_path)
    assert {"snapshot_rank", "duplicate_rank"} <= checks


def test_what_ingest_would_refuse_or_the_capture_recorded_is_reported(tmp_path: Path) -> None:
    def warn(info: object) -> None:
        info.warnings.append("sampler process 4242 exited early (signal 9): cpu_util.pb ends at 1.2 s")  # type: ignore[attr-defined]

    session = write_session(tmp_path, [x("op", 0, 1)], edit=warn)
    (session / "memory_snapshot_rank0.pickle").write_bytes(b"cos\nsystem\n(S'echo owned'\ntR.")  # code, not data
    (session / "trace.json.tmp.tmp").write_bytes(b"{")
    found = {f.check: f for f in verify(tmp_path).all_findings()}
    assert "refused" in found["snapshot_unreadable"].message and found["snapshot_unreadable"].severity == "problem"
    assert "sampler process 4242 exited early" in found["capture_warning"].message
    assert found["leftover_temp"].file == "trace.json.tmp.tmp"


def test_compiled_kernels_that_ran_but_were_not_copied(tmp_path: Path) -> None:
    write_session(tmp_path, [x("triton_poi_fused_add_0", 0, 1, kernel_backend="triton", kernel_hash="abc123")])
    assert "kernels_missing" in _checks(tmp_path)


def test_clock_skew_between_ranks_from_collective_ends(tmp_path: Path) -> None:
    def ranked(offset_us: float) -> list[dict]:
        meta = {"Collective name": "allreduce", "Process Group Name": "0"}
        return [kernel("ncclDevKernel_AllReduce", 100 * i + offset_us, 50, correlation=i, **meta) for i in range(5)]

    write_session(tmp_path, ranked(0), rank=0, pid=1, world_size=3, instance="a")
    write_session(tmp_path, ranked(0), rank=1, pid=2, world_size=3, instance="b")
    write_session(tmp_path, ranked(7_000), rank=2, pid=3, world_size=3, instance="c")  # 7 ms ahead
    skew = [f for f in verify(tmp_path).findings if f.check == "clock_skew"]
    assert len(skew) == 1 and skew[0].message.startswith("rank 2: collectives end +7.0 ms")


def test_device_mode_without_device_files_says_why(tmp_path: Path) -> None:
    def no_device(info: object) -> None:
        info.config.modes.append(ti.Mode.MODE_DEVICE)  # type: ignore[attr-defined]
        info.modes.add(mode=ti.Mode.MODE_DEVICE, reason="no accelerator on this host")  # type: ignore[attr-defined]

    write_session(tmp_path, [x("op", 0, 1)], edit=no_device)
    note = next(f for f in verify(tmp_path).all_findings() if f.check == "mode_outcome")
    assert note.severity == "note" and "no accelerator" in note.message


def _imported(tmp_path: Path, events: list[dict[str, object]]) -> Path:
    trace = tmp_path / "worker0.pt.trace.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    assert main(["import", str(trace), "--out", str(tmp_path / "sessions")]) == 0
    return tmp_path / "sessions"


def test_an_imported_trace_with_no_profiler_span_still_shows_no_synchronize(tmp_path: Path) -> None:
    # GIVEN a trace with no profiler span, whose kernel ends 5 ms after the last host event,
    # and a device annotation that ends later still (a label, not host work)
    events = [
        x("aten::mm", 0, 10),
        x("cudaLaunchKernel", 2, 3, cat="cuda_runtime", correlation=1),
        kernel("gemm", 20, 5_000, correlation=1),
        x("ProfilerStep#1", 0, 6_000, cat="gpu_user_annotation", pid=0, tid=7, device=0, stream=7),
    ]
    assert "no_synchronize" in _checks(_imported(tmp_path, events))


def test_an_imported_trace_names_its_compiled_kernels_without_a_capture_remedy(tmp_path: Path) -> None:
    events = [x("triton_poi_fused_add_0", 0, 1, kernel_backend="triton", kernel_hash="abc123")]
    findings = {f.check: f for f in verify(_imported(tmp_path, events)).all_findings()}
    assert "kernels_missing" not in findings
    assert findings["kernels_not_imported"].severity == "note"
    assert "imported trace" in findings["kernels_not_imported"].message


def _relisted(session: Path) -> None:
    info = ti.read_trace_info(session)
    del info.files[:]
    info.files.extend(ti.build_manifest(session))
    ti.write_trace_info(session, info)


@pytest.mark.parametrize("damaged_head", [False, True])
def test_a_changed_byte_of_the_trace_is_found_by_the_scan_that_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damaged_head: bool
) -> None:
    # GIVEN a session whose trace.json carries keys after its events, as Kineto writes them, or
    # whose head is damaged so that the scan stops reading early
    monkeypatch.setattr(event_stream, "CHUNK_BYTES", 4096)
    session = write_session(tmp_path, [x("aten::mm", i, 1) for i in range(100)])
    trace = session / layout.TRACE_JSON
    text = trace.read_text()[:-1] + ', "traceName": "a.json"}'
    trace.write_text(text.replace('"traceEvents"', "oops", 1) if damaged_head else text)
    _relisted(session)
    assert "corrupt" not in _checks(tmp_path)
    # WHEN one byte after the event array changes, the size staying the same
    trace.write_text(trace.read_text().replace('"a.json"', '"b.json"'))
    # THEN the hash the scan makes while reading the events covers it
    corrupt = [f for f in verify(tmp_path).all_findings() if f.check == "corrupt"]
    assert [f.file for f in corrupt] == [layout.TRACE_JSON]


def test_clock_skew_from_kernels_without_metadata_and_from_gloo_ops(tmp_path: Path) -> None:
    # NCCL kernels that carry no `Collective name` (as in the public DLRM set) and gloo's host ops
    # are matched by the collective their name spells and their order on each rank.
    def ranked(offset_us: float, name: str) -> list[dict]:
        events = [kernel(name, 100 * i + offset_us, 50, correlation=i) for i in range(4)]
        if name.startswith("gloo:"):
            events = [x(name, 100 * i + offset_us, 50) for i in range(4)]
        return events

    for case, name in (("nccl", "ncclKernel_AllReduce_RING_LL_Sum_float"), ("gloo", "gloo:all_reduce")):
        root = tmp_path / case
        write_session(root, ranked(0, name), rank=0, pid=1, world_size=3, instance="a")
        write_session(root, ranked(0, name), rank=1, pid=2, world_size=3, instance="b")
        write_session(root, ranked(-4_000, name), rank=2, pid=3, world_size=3, instance="c")  # 4 ms behind
        skew = [f for f in verify(root).findings if f.check == "clock_skew"]
        assert len(skew) == 1 and skew[0].message.startswith("rank 2: collectives end -4.0 ms"), case


def test_ranks_whose_clocks_could_not_be_checked_are_named(tmp_path: Path) -> None:
    sends = [kernel("ncclKernel_SendRecv", 100 * i, 50, correlation=i) for i in range(4)]  # ends need not agree
    write_session(tmp_path, sends, rank=0, pid=1, world_size=2, instance="a")
    write_session(tmp_path, sends, rank=1, pid=2, world_size=2, instance="b")
    unchecked = [f for f in verify(tmp_path).findings if f.check == "clock_unchecked"]
    assert len(unchecked) == 1 and "rank(s) 0, 1 could not be checked" in unchecked[0].message


def test_the_public_dlrm_ranks_clocks_are_checked_and_a_shifted_one_is_found(tmp_path: Path) -> None:
    import gzip
    import shutil

    traces = tmp_path / "traces"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "dlrm_8rank", traces)
    assert main(["import", str(traces), "--out", str(tmp_path / "prof")]) == 0
    assert "clock_agreement" in _checks(tmp_path / "prof")
    shifted = next(traces.glob("worker3_*.json.gz"))
    document = json.loads(gzip.decompress(shifted.read_bytes()))
    for event in document["traceEvents"]:
        if isinstance(event.get("ts"), (int, float)):
            event["ts"] += 5_000  # µs: rank 3's clock 5 ms ahead
    shifted.write_bytes(gzip.compress(json.dumps(document).encode()))
    assert main(["import", str(traces), "--out", str(tmp_path / "prof2")]) == 0
    skew = [f for f in verify(tmp_path / "prof2").findings if f.check == "clock_skew"]
    assert len(skew) == 1 and skew[0].message.startswith("rank 3: collectives end +5.0 ms")


@pytest.mark.parametrize("label", ["entire_frame_compile", "inductor_compile", "autotune_select_algorithm"])
def test_no_warmup_reads_compilation_as_the_findings_do(tmp_path: Path, label: str) -> None:
    # GIVEN a window mostly spent in a compile label that the compile_in_window finding counts
    write_session(tmp_path, [x(label, 0, 80, cat="user_annotation"), x("aten::mm", 85, 10)])
    # WHEN verify scans it
    found = {f.check: f for f in verify(tmp_path).all_findings()}
    # THEN it counts it too (model.compilation: one set of patterns)
    assert "compilation takes" in found["no_warmup"].message
