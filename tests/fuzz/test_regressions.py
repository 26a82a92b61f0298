"""The crashes the fuzz suite found, rebuilt by hand from their root causes, so they stay fixed
whatever the mutator draws next."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from kinetoscope import FormatError
from kinetoscope.format.perfetto_packets.event_reader import iter_events
from kinetoscope.format.perfetto_packets.packets import ReadStats, frame, iter_packets
from kinetoscope.format.perfetto_packets.perfetto import protos
from kinetoscope.format.perfetto_packets.reader import header_of, iter_trace_packets
from kinetoscope.format.perfetto_packets.wire import varint
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files.kernel_index import read_index
from kinetoscope.format.session_files.snapshot import load_snapshot, loads_plain
from kinetoscope.importer import trace_import as imp
from kinetoscope.ingest.rows.samples import counter_rows

from .test_fuzz import SEED


def test_a_length_prefix_of_exabytes_is_a_cut_short_file_not_a_memory_error(tmp_path: Path) -> None:
    path = tmp_path / "ntrace.pb"
    data = (SEED / "ntrace.pb").read_bytes()
    path.write_bytes(data + b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x7f" + b"\x00" * 64)
    stats = ReadStats()
    packets = list(iter_packets(path, stats))
    assert packets and stats.truncated and "whole packet" in stats.problem


def _with_bad_utf8(data: bytes, text: bytes) -> bytes:
    """``data`` with the first occurrence of ``text`` given an invalid UTF-8 byte (same length)."""
    assert text in data
    return data.replace(text, text[:1] + b"\xff" + text[2:], 1)


def test_invalid_utf8_in_header_labels_and_names_reads_as_replacement_characters(tmp_path: Path) -> None:
    data = (SEED / "ntrace.pb").read_bytes()
    path = tmp_path / "ntrace.pb"
    assert b"kinetoscope.host=vm" in data  # the seed was captured on a host named vm
    path.write_bytes(_with_bad_utf8(data.replace(b"kinetoscope.host=vm", b"kinetoscope.host=v\xff"), b"[memory]"))
    header = header_of(next(iter_trace_packets(path)))
    assert header is not None and header.hostname == "v\ufffd" and header.file_kind == "system_trace"
    names = [event.name for event in iter_events(path)]
    assert any("\ufffd" in name for name in names) and all(isinstance(name, str) for name in names)


def test_invalid_utf8_in_a_counter_track_name_keeps_the_samples(tmp_path: Path) -> None:
    data = (SEED / "host_mem.pb").read_bytes()
    path = tmp_path / "host_mem.pb"
    path.write_bytes(_with_bad_utf8(data, b"host memory"))
    rows = counter_rows(path, ProblemLog())
    assert rows and any("\ufffd" in row[0] for row in rows)


def test_a_counter_timestamp_past_2_63_is_skipped_and_counted(tmp_path: Path) -> None:
    pb = protos()
    packets = []
    for ts in (1_000, 1 << 63, 2_000):
        packet = pb.TracePacket(timestamp=ts)
        packet.track_event.type = pb.TrackEvent.TYPE_COUNTER
        packet.track_event.track_uuid, packet.track_event.double_counter_value = 7, 1.5
        packets.append(packet)
    trace = pb.Trace(packet=packets)
    path = tmp_path / "cpu_util.pb"
    path.write_bytes(trace.SerializeToString())
    problems = ProblemLog()
    assert [row[1] for row in counter_rows(path, problems)] == [1_000, 2_000]
    assert problems.counts() == {"out_of_range": 1}


def test_a_pickle_naming_a_huge_memo_index_is_refused_without_allocating_it() -> None:
    data = b"\x80\x04]r" + (392_729_701).to_bytes(4, "little") + b"."  # EMPTY_LIST, LONG_BINPUT 392729701
    with pytest.raises(FormatError, match="far more memory"):
        loads_plain(data, "snapshot.pickle")
    assert loads_plain(pickle.dumps({"segments": []}, protocol=4), "ok.pickle") == {"segments": []}


@pytest.mark.parametrize(
    "document",
    [{"format": "2", "trace_names": {}}, {"format": 1e400, "trace_names": {}}, {"format": {}, "trace_names": {}},
     {"format": True, "trace_names": {}}],
)  # fmt: skip
def test_a_kernel_index_whose_format_is_no_whole_number_is_refused(document: object, tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    path.write_text(json.dumps(document).replace("Infinity", "1e400"))
    with pytest.raises(FormatError, match="'format'"):
        read_index(path)


def test_json_nested_5000_deep_is_refused_as_not_json(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    path.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(FormatError, match="not JSON"):
        read_index(path)


def _trace_with(tmp_path: Path, old: bytes, new: bytes) -> Path:
    data = (SEED / layout.TRACE_JSON).read_bytes()
    assert old in data
    path = tmp_path / "t.json"
    path.write_bytes(data.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    "new",
    [b'"name": "\\ud800"', b'"name": "\\udfff\\ud800"', b'"name": ' + b"[" * 5000 + b"]" * 5000],
    ids=["lone-surrogate", "reversed-surrogates", "nested-5000"],
)
def test_a_trace_with_a_lone_surrogate_or_deep_nesting_keeps_its_other_events(new: bytes, tmp_path: Path) -> None:
    source = tmp_path / "clean.json"
    shutil.copy(SEED / layout.TRACE_JSON, source)
    clean = imp.import_trace(source, imp.ImportOptions(out_dir=tmp_path / "clean"))
    damaged = _trace_with(tmp_path, b'"name": "aten::', new + b', "x": "aten::')
    result = imp.import_trace(damaged, imp.ImportOptions(out_dir=tmp_path / "out"))
    assert result.session is not None and result.stats is not None and clean.stats is not None
    kept = result.stats.runtime_events + result.stats.device_events
    assert kept >= clean.stats.runtime_events + clean.stats.device_events - 1



@pytest.mark.parametrize("prefix", [b"\xff\xff\xff\xff\x0f", b"\x02"])
def test_one_bad_length_prefix_in_host_samples_costs_one_packet(tmp_path: Path, prefix: bytes) -> None:
    payloads = list(iter_packets(SEED / "host_mem.pb"))
    frames = [frame(payload) for payload in payloads]
    middle = len(frames) // 2
    damaged = frames[middle][:1] + prefix + frames[middle][1 + len(varint(len(payloads[middle]))) :]
    path = tmp_path / "host_mem.pb"
    path.write_bytes(b"".join([*frames[:middle], damaged, *frames[middle + 1 :]]))
    clean = counter_rows(SEED / "host_mem.pb", ProblemLog())
    problems = ProblemLog()
    rows = counter_rows(path, problems)
    # One packet holds a few samples at most; before resynchronising, every one after it was lost.
    assert len(clean) - 8 <= len(rows) < len(clean) and rows[-1] == clean[-1]
    assert any("damaged stretch" in problem.message for problem in problems.records)


# --- found by the structural snapshot, dataset-file and one-bad-file series (test_fuzz_dataset) ---


def _seed_snapshot() -> dict[str, object]:
    snapshot = loads_plain((SEED / "memory_snapshot_rank0.pickle").read_bytes(), "seed")
    assert isinstance(snapshot, dict)
    return snapshot


def test_a_block_that_is_a_list_is_refused_not_an_attribute_error(tmp_path: Path) -> None:
    # snapshot_fields#41 and #48: a block replaced by [1] reached summarize's block.get()
    snapshot = _seed_snapshot()
    snapshot["segments"][0]["blocks"][0] = [1]  # type: ignore[index]
    path = tmp_path / "memory_snapshot_rank0.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    with pytest.raises(FormatError, match=r"segments\[0\]\.blocks\[0\] is list \[1\], not a block"):
        load_snapshot(path)


def test_the_seed_snapshot_shared_into_a_huge_tree_is_refused_quickly(tmp_path: Path) -> None:
    # the 10.5 KB snapshot that took 32 s and 1.6 GB: every list of the seed shared 300 times
    snapshot = _seed_snapshot()
    segment = snapshot["segments"][0]  # type: ignore[index]
    segment["blocks"] = [segment["blocks"][0]] * 300
    segment["blocks"][0]["frames"] = [segment["blocks"][0]["frames"][0]] * 300
    snapshot["segments"] = [segment] * 300
    path = tmp_path / "memory_snapshot_rank0.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    assert path.stat().st_size < 12_000
    with pytest.raises(FormatError, match="shares its parts so often"):
        load_snapshot(path)
