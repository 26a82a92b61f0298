"""The fuzz suite: every reader and the commands that read sessions, driven in process over
mutated copies of real seed files (a CPU capture of our own in ``tests/data/fuzz-seed``, and
an imported public CUDA trace for the device files).

An input may be refused with kinetoscope's own error (``KinetoscopeError``) or read in part;
anything else fails the test: another exception, over 10 s for one input, over 1 GiB peak RSS.
``KINETOSCOPE_FUZZ_SCALE`` multiplies the number of inputs (default 1: about 3,000 inputs,
under a minute on two cores); a failure names its series and index, which rebuild the input
(``python -m tests.fuzz.replay SERIES INDEX``).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.format.perfetto_packets.event_reader import iter_events
from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.format.session_files.kernel_index import read_index
from kinetoscope.format.session_files.snapshot import load_snapshot, summarize
from kinetoscope.importer import trace_import as imp
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.verify.report import verify

from ..conftest import REPO
from .harness import SeriesResult, run_series, untyped_message

SEED = REPO / "tests" / "data" / "fuzz-seed"
CUDA_TRACE = REPO / "tests" / "data" / "import-cuda-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
SCALE = float(os.environ.get("KINETOSCOPE_FUZZ_SCALE", "1"))
KERNEL_INDEX = {
    "format": 2, "cache_dir": "/tmp/torchinductor_user", "precached": True,
    "trace_names": {"## Call CompiledFxGraph fabc ##": [
        {"kind": "graph", "graph": "fabc", "cache_key": "cabc", "files": ["kernels/cabc/cabc.py"],
         "kernels": ["cpp_fused_relu_0"], "in_trace": True,
         "provenance": {"cpp_fused_relu_0": {"post_grad_nodes": ["relu"], "pre_grad_nodes": ["relu"],
                                             "source": [{"file": "m.py", "line": 3, "function": "f", "code": "x"}]}}}]},
    "files": {"kernels/cabc/cabc.py": {"size_bytes": 12, "sha256": "0" * 64, "source": "/tmp/x.py"}},
}  # fmt: skip


def count(base: int) -> int:
    return max(1, int(base * SCALE))


def _check(result: SeriesResult) -> None:
    assert result.failures == [], "\n".join(map(str, result.failures[:20]))
    assert result.inputs > 0


@pytest.fixture(scope="module")
def cuda_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A public CUDA trace imported: its device_0.pb and ntrace.pb seed the device-file series."""
    out = tmp_path_factory.mktemp("cuda")
    session = imp.import_trace(CUDA_TRACE, imp.ImportOptions(out_dir=out)).session
    assert session is not None
    return session


def _session_copy(work: Path) -> Path:
    """The seed as a session directory at a real layout path (readers parse it)."""
    session = layout.session_path(work / "profile", "fuzz-host", 4242, 1_764_000_000_000_000_000, 0)
    shutil.copytree(SEED, session)
    return session


def _quiet_main(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


# --- readers of one file ---------------------------------------------------------------------


def read_packets(data: bytes, work: Path) -> None:
    path = work / "ntrace.pb"
    path.write_bytes(data)
    for _ in iter_events(path):
        pass
    read_packet_file(path)


def read_info(data: bytes, work: Path) -> None:
    (work / layout.TRACE_INFO).write_bytes(data)
    info = ti.read_trace_info(work)
    ti.state_name(info.state)
    for mode in info.modes:
        ti.mode_name(mode.mode)


def read_snapshot(data: bytes, work: Path) -> None:
    path = work / "memory_snapshot_rank0.pickle"
    path.write_bytes(data)
    summarize(load_snapshot(path))


def read_kernel_index(data: bytes, work: Path) -> None:
    path = work / "index.json"
    path.write_bytes(data)
    read_index(path)


def import_trace(data: bytes, work: Path) -> None:
    """``import`` of a mutated trace, gzip-compressed for one input in four."""
    compressed = len(data) % 4 == 0
    path = work / ("t.json.gz" if compressed else "t.json")
    path.write_bytes(gzip.compress(data, 1) if compressed else data)
    imp.import_trace(path, imp.ImportOptions(out_dir=work / "sessions"))


@pytest.mark.parametrize(
    ("series", "seed_name", "target", "base"),
    [
        ("ntrace", "ntrace.pb", read_packets, 500),
        ("cpu_util", "cpu_util.pb", read_packets, 300),
        ("host_mem", "host_mem.pb", read_packets, 300),
        ("trace_info", layout.TRACE_INFO, read_info, 500),
        ("snapshot", "memory_snapshot_rank0.pickle", read_snapshot, 500),
    ],
)
def test_file_readers_are_total(
    series: str, seed_name: str, target: Callable[[bytes, Path], None], base: int, tmp_path: Path
) -> None:
    _check(run_series(series, (SEED / seed_name).read_bytes(), count(base), target, tmp_path))


def test_device_file_reader_is_total(cuda_session: Path, tmp_path: Path) -> None:
    seed = (cuda_session / "device_0.pb").read_bytes()
    _check(run_series("device", seed, count(400), read_packets, tmp_path))


def test_kernel_index_reader_is_total(tmp_path: Path) -> None:
    seed = json.dumps(KERNEL_INDEX, indent=1).encode()
    _check(run_series("kernel_index", seed, count(300), read_kernel_index, tmp_path, json=True))


def test_import_is_total_over_damaged_traces(tmp_path: Path) -> None:
    seed = (SEED / layout.TRACE_JSON).read_bytes()
    _check(run_series("import_cpu", seed, count(150), import_trace, tmp_path, json=True))


def test_import_is_total_over_damaged_cuda_traces(tmp_path: Path) -> None:
    seed = gzip.decompress(CUDA_TRACE.read_bytes())
    _check(run_series("import_cuda", seed, count(100), import_trace, tmp_path, json=True))


# --- a whole session with one damaged file: ingest and verify ----------------------------------


def _ingested_events(work: Path) -> int:
    report = ingest(IngestOptions(profile_dir=work / "profile", out=work / "dataset", jobs=1))
    for outcome in report.outcomes:
        untyped = untyped_message(outcome.message or "")
        assert untyped is None, f"ingest failed on {untyped}: {outcome.message}"
    return sum(outcome.stats.events for outcome in report.outcomes)


@pytest.fixture(scope="module")
def seed_events(tmp_path_factory: pytest.TempPathFactory) -> int:
    """How many trace events the undamaged seed session ingests."""
    work = tmp_path_factory.mktemp("seed")
    _session_copy(work)
    return _ingested_events(work)


def _ingest_session_with(name: str, seed_events: int) -> Callable[[bytes, Path], None]:
    """Ingest and verify of the seed session with ``name`` damaged: a damaged file other than the
    trace costs that file's data only (every trace event is still ingested)."""

    def target(data: bytes, work: Path) -> None:
        session = _session_copy(work)
        (session / name).write_bytes(data)
        events = _ingested_events(work)
        if name != layout.TRACE_JSON:
            assert events == seed_events, f"damaged {name} cost trace events: {events} of {seed_events}"
        verify(work / "profile")

    return target


@pytest.mark.parametrize(
    "name", [layout.TRACE_JSON, "ntrace.pb", "cpu_util.pb", "host_mem.pb", layout.TRACE_INFO,
             "memory_snapshot_rank0.pickle"],
)  # fmt: skip
def test_ingest_and_verify_survive_one_damaged_file(name: str, seed_events: int, tmp_path: Path) -> None:
    assert seed_events > 300
    seed = (SEED / name).read_bytes()
    target = _ingest_session_with(name, seed_events)
    _check(run_series(f"session_{name}", seed, count(30), target, tmp_path, json=name.endswith(".json")))


def _dump_file(name: str) -> Callable[[bytes, Path], None]:
    def target(data: bytes, work: Path) -> None:
        path = work / name
        path.write_bytes(data)
        _quiet_main(["dump", str(path)])

    return target


@pytest.mark.parametrize("name", ["ntrace.pb", layout.TRACE_INFO, "memory_snapshot_rank0.pickle", layout.TRACE_JSON])
def test_dump_is_total(name: str, tmp_path: Path) -> None:
    seed = (SEED / name).read_bytes()
    _check(run_series(f"dump_{name}", seed, count(60), _dump_file(name), tmp_path, json=name.endswith(".json")))
