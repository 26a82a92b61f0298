"""How many times each command reads a trace: bytes read of the source and of the session's
``trace.json``, counted at every ``open`` of those files (a file mapped into memory counts as
read whole), against the file's size.

One pass per command, besides bounded blocks: ``import`` reads its source once (copying,
decompressing and hashing together) and its copy once (the conversion, which notes the
profiling window and host pid the head and tail blocks foresaw); ``ingest`` reads it once;
``verify`` once (its scan hashes the file for the manifest). Capture export reads the
``trace.json`` torch wrote once to convert and hash it, and, on a host without an accelerator,
once more for the allocator events (mapped, read by pattern).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import mmap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.format.kineto import kineto_json
from kinetoscope.format.session_files import session_dir as layout

# command -> (most reads of the source, most reads of the session's trace.json), in file sizes.
# Measured on this test's 8.7 MB trace: import 1.0 and 1.14, ingest 1.14, verify 1.0. Beyond the whole
# passes, a look at a trace's head reads a 128 KiB block (0.015 of this file) and one at its tail
# (the keys after the events, and the facts an import starts from) a 1 MiB block (0.12).
BOUNDS = {"import": (1.01, 1.15), "ingest": (0.0, 1.15), "verify": (0.0, 1.01)}


def _trace(path: Path, steps: int) -> Path:
    events = []
    for i in range(steps):
        ts = 1000 + i * 10
        events += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": ts, "dur": 8,
             "args": {"External id": i}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": ts + 1,
             "dur": 2, "args": {"External id": i, "correlation": i}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts + 5, "dur": 3,
             "args": {"correlation": i, "device": 0, "stream": 7}},
        ]  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


class _Counted(io.RawIOBase):
    """A read-only binary file that adds what it reads to ``counts[key]``."""

    def __init__(self, handle: Any, counts: Counter[str], key: str) -> None:
        self._handle, self._counts, self._key = handle, counts, key

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        got = int(self._handle.readinto(buffer))
        self._counts[self._key] += got
        return got

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._handle.seek(offset, whence))

    def tell(self) -> int:
        return int(self._handle.tell())

    def fileno(self) -> int:
        return int(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()
        super().close()


@contextlib.contextmanager
def counting(monkeypatch: pytest.MonkeyPatch, source: Path, out: Path) -> Iterator[Counter[str]]:
    """Bytes read while the block runs from ``source`` and from any ``trace.json`` under ``out``
    (a session's copy, in its staging folder during an import)."""
    counts: Counter[str] = Counter()
    real_open, real_mmap = builtins.open, mmap.mmap
    keys_of_fds: dict[int, str] = {}

    def key_of(file: Any) -> str | None:
        if not isinstance(file, (str, Path)):
            return None
        path = Path(file).resolve()
        if path == source:
            return "source"
        return "copy" if path.name == layout.TRACE_JSON and out in path.parents else None

    def counted_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        key = key_of(file)
        if key is None or mode not in ("rb", "br"):
            return real_open(file, mode, *args, **kwargs)
        raw = real_open(file, "rb", buffering=0)
        keys_of_fds[raw.fileno()] = key
        return io.BufferedReader(_Counted(raw, counts, key))

    def counted_mmap(fileno: int, length: int, *args: Any, **kwargs: Any) -> Any:
        mapped = real_mmap(fileno, length, *args, **kwargs)
        key = keys_of_fds.get(fileno)
        if key is not None:  # a fd reused since is a different file: only those opened here count
            counts[key] += len(mapped)
        return mapped

    with monkeypatch.context() as patch:
        patch.setattr(builtins, "open", counted_open)
        patch.setattr(mmap, "mmap", counted_mmap)
        yield counts


def _quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def test_each_command_reads_the_trace_as_often_as_documented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _trace(tmp_path / "worker0.pt.trace.json", 20_000).resolve()
    size = source.stat().st_size
    sessions, dataset = (tmp_path / "sessions").resolve(), tmp_path / "dataset"
    commands = {
        "import": ["import", str(source), "--out", str(sessions)],
        "ingest": ["ingest", str(sessions), "--out", str(dataset), "--jobs", "1"],
        "verify": ["verify", str(sessions)],
    }
    read: dict[str, dict[str, float]] = {}
    for command, argv in commands.items():
        with counting(monkeypatch, source, sessions) as counts:
            assert _quiet(argv) == 0, command
        read[command] = {key: counts[key] / size for key in ("source", "copy")}
    for command, (most_source, most_copy) in BOUNDS.items():
        assert read[command]["source"] <= most_source, (command, read)
        assert read[command]["copy"] <= most_copy, (command, read)
    assert read["import"]["source"] >= 0.99 and read["ingest"]["copy"] >= 0.99, read  # every byte is read


def test_a_light_import_reads_the_trace_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a trace imported without packet files, copied (--no-pb) and linked (the raw-trace cache)
    source = _trace(tmp_path / "worker0.pt.trace.json", 20_000).resolve()
    size = source.stat().st_size
    sessions = (tmp_path / "light").resolve()
    with counting(monkeypatch, source, sessions) as counts:
        assert _quiet(["import", str(source), "--out", str(sessions), "--no-pb"]) == 0
    copied = {key: counts[key] / size for key in ("source", "copy")}
    cache = (tmp_path / ".kinetoscope").resolve()
    with counting(monkeypatch, source, cache) as counts:
        assert _quiet(["verify", str(source)]) in (0, 1)
    # THEN the copy reads the source once and the scan for the facts the copy once; a linked trace
    # is read once in all by the import (hashed by the scan), then once by verify
    assert 0.99 <= copied["source"] <= BOUNDS["import"][0] and copied["copy"] <= BOUNDS["import"][1], copied
    linked = (counts["source"] + counts["copy"]) / size
    assert 1.99 <= linked <= BOUNDS["import"][1] + BOUNDS["verify"][1], linked


def test_an_import_converts_again_only_when_the_blocks_miss_a_fact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the profiler's span last, where Kineto writes it, or amid the events, beyond the tail block
    events = json.loads(_trace(tmp_path / "t.json", 20_000).read_text())["traceEvents"]
    span = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 1, "ts": 0, "dur": 10**6}
    read = {}
    for where, at in (("last", len(events)), ("amid", len(events) // 2)):
        source = tmp_path / f"{where}.json"
        source.write_text(json.dumps({"traceEvents": [*events[:at], span, *events[at:]]}))
        sessions = (tmp_path / where).resolve()
        with counting(monkeypatch, source.resolve(), sessions) as counts:
            assert _quiet(["import", str(source), "--out", str(sessions)]) == 0
        read[where] = counts["copy"] / source.stat().st_size
    # THEN the copy is converted once when the tail shows the span, twice when it does not
    assert read["last"] <= BOUNDS["import"][1] and 2.0 <= read["amid"] <= 1.0 + BOUNDS["import"][1], read


def test_capture_export_reads_the_trace_torch_wrote_once_to_convert_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    from tests.capture.helpers import runtime_profile

    # GIVEN a real CPU run with allocator events, profiled into a RUNTIME session
    out = (tmp_path / "prof").resolve()
    with counting(monkeypatch, tmp_path / "none", out) as counts, runtime_profile(out, profile_memory=True):
        x = torch.ones(64)
        for _ in range(3000):
            x = (x + 1).relu()
    (trace,) = out.rglob(layout.TRACE_JSON)
    # THEN export read it once to convert (and hash) it and once, mapped, for the allocator events,
    # besides the head block that gives baseTimeNanoseconds
    size = trace.stat().st_size
    assert size > 4 * kineto_json.HEAD_BLOCK_BYTES
    assert 2.0 <= counts["copy"] / size <= 2.0 + 64 * 1024 / size, (counts, size)
