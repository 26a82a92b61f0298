"""summary tunes glibc malloc (arenas, large blocks) before its threads allocate; elsewhere nothing changes."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from kinetoscope.report import malloc_options


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's M_ARENA_MAX is glibc's")
def test_glibc_takes_the_cap() -> None:
    malloc_options.tune_malloc.cache_clear()
    assert malloc_options.tune_malloc() is True


def test_without_a_c_library_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    malloc_options.tune_malloc.cache_clear()
    monkeypatch.setattr(malloc_options, "mallopt_function", lambda: None)
    try:
        assert malloc_options.tune_malloc() is False
    finally:
        malloc_options.tune_malloc.cache_clear()


def test_the_threads_share_one_arena(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a C library that records the settings asked of it
    asked: list[tuple[int, int]] = []
    recorded = lambda option, value: asked.append((option, value)) or 1  # noqa: E731
    monkeypatch.setattr(malloc_options, "mallopt_function", lambda: recorded)
    malloc_options.tune_malloc.cache_clear()
    try:
        # WHEN the summary tunes malloc
        assert malloc_options.tune_malloc() is True
    finally:
        malloc_options.tune_malloc.cache_clear()
    # THEN its threads share one arena, so the columns one thread frees serve the others
    assert (malloc_options.M_ARENA_MAX, 1) in asked


def _in_a_fresh_process(code: str, env: dict[str, str] | None = None) -> list[str]:
    """What ``code`` prints, run by a new interpreter (Arrow's default pool is chosen once a process)."""
    import subprocess

    from ..conftest import PYTHON, python_env

    done = subprocess.run([PYTHON, "-c", code], env={**python_env(), **(env or {})}, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return done.stdout.split()


_PARQUET_ROUND_TRIP = """
import os, pyarrow as pa, pyarrow.parquet as pq, tempfile
path = os.path.join(tempfile.mkdtemp(), "t.parquet")
pq.write_table(pa.table({"s": [str(i) for i in range(100_000)]}), path)
pq.read_table(path)
pools = pa.default_memory_pool().backend_name, pa.mimalloc_memory_pool().max_memory()
print(*pools, os.environ.get("ARROW_DEFAULT_MEMORY_POOL"))
"""


def test_the_system_pool_serves_arrows_own_cpp_allocations() -> None:
    # GIVEN a process that has not loaded pyarrow, WHEN malloc is made Arrow's pool
    printed = _in_a_fresh_process(
        "from kinetoscope.report.malloc_options import arrow_system_pool\nprint(arrow_system_pool())"
        + _PARQUET_ROUND_TRIP
    )
    # THEN Parquet's writer and reader take nothing from mimalloc, and the environment is as it was
    assert printed == ["True", "system", "0", "None"]


def test_a_users_own_arrow_pool_is_kept() -> None:
    printed = _in_a_fresh_process(
        "from kinetoscope.report.malloc_options import arrow_system_pool\nprint(arrow_system_pool())"
        + _PARQUET_ROUND_TRIP,
        {"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"},
    )
    assert printed[:2] == ["False", "mimalloc"]
    assert printed[3] == "mimalloc"


def test_the_summary_command_takes_the_system_pool_before_pyarrow_loads(tmp_path: Path) -> None:
    # GIVEN a small ingested dataset
    from ..cli.test_summary_golden import _ingested
    from ..ingest.helpers import import_scenario

    dataset = _ingested(import_scenario("import-cpu-gloo", tmp_path / "prof"), tmp_path / "ds")
    # WHEN a new process runs the summary command, THEN every Arrow allocation came from malloc
    printed = _in_a_fresh_process(
        "import contextlib, io\nfrom kinetoscope.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): assert main(['summary', {str(dataset)!r}]) == 0\n"
        "import pyarrow as pa\nprint(pa.default_memory_pool().backend_name, pa.mimalloc_memory_pool().max_memory())"
    )
    assert printed == ["system", "0"]


_FREED_COLUMN = """
import os, numpy as np
from kinetoscope.report import malloc_options
def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
print(malloc_options.tune_malloc())
column = np.ones(6 << 20, dtype=np.int64)
held = resident_bytes()
del column
print((held - resident_bytes()) >> 20)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mmap threshold")
def test_a_block_of_a_large_column_goes_back_to_the_system_once_freed() -> None:
    # GIVEN the summary's malloc settings, in a process of its own (in one that freed a large block
    # into its heap before, as a test process may have, malloc serves the next from that free heap)
    # WHEN a column of 6 M rows of 64 bits (48 MiB, a large rank's) is made, then freed
    tuned, freed_mib = _in_a_fresh_process(_FREED_COLUMN)
    # THEN its pages leave at once (mapped on its own: in the heap, freed pages stay resident
    # behind what is allocated after them, 10 M tiny events: 2.5 GB peak instead of 2.1)
    assert tuned == "True" and int(freed_mib) >= 40
