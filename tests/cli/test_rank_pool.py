"""How many CPUs and how much memory the summary's worker processes may take: a container's
cgroup limits (v2, v1) count, besides the host's figures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kinetoscope.cli import rank_pool


def _cgroup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    monkeypatch.setattr(rank_pool, "CGROUP", tmp_path)


def _affinity() -> int:
    return len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("files", "quota"),
    [
        ({"cpu.max": "100000 100000"}, 1),  # v2: one CPU
        ({"cpu.max": "250000 100000"}, 2),  # v2: two and a half, rounded down
        ({"cpu.max": "max 100000"}, None),  # v2: no quota
        ({"cpu/cpu.cfs_quota_us": "300000", "cpu/cpu.cfs_period_us": "100000"}, 3),  # v1
        ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, None),  # v1: no quota
        ({}, None),  # no cgroup files
    ],
)
def test_a_cpu_quota_caps_the_cpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], quota: int | None
) -> None:
    _cgroup(tmp_path, monkeypatch, files)
    assert rank_pool._cpu_quota() == quota
    assert rank_pool.cpus() == (min(_affinity(), quota) if quota else _affinity())


def test_a_memory_limit_caps_what_is_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    host = psutil.virtual_memory().available
    _cgroup(tmp_path, monkeypatch, {"memory.max": str(3 << 20), "memory.current": str(1 << 20)})
    assert rank_pool.available_bytes() == min(host, 2 << 20)  # v2: the limit less what the group uses
    v1 = {"memory/memory.limit_in_bytes": str(5 << 20), "memory/memory.usage_in_bytes": str(1 << 20)}
    _cgroup(tmp_path / "v1", monkeypatch, v1)
    assert rank_pool.available_bytes() == min(host, 4 << 20)  # v1
    _cgroup(tmp_path / "v1-none", monkeypatch, {**v1, "memory/memory.limit_in_bytes": str(1 << 62)})
    assert abs(rank_pool.available_bytes() - host) < 256 << 20  # v1's "no limit": the host's figure


def test_a_failing_block_cancels_the_ranks_not_started() -> None:
    import time

    futures = []
    with pytest.raises(RuntimeError), rank_pool.pool(1, 1) as executor:
        futures = [executor.submit(time.sleep, 0.2) for _ in range(6)]
        raise RuntimeError("a rank failed")  # as a rank's error reaches the summary
    deadline = time.monotonic() + 30
    while not all(future.done() for future in futures) and time.monotonic() < deadline:
        time.sleep(0.05)  # the pool's manager cancels them as it shuts down
    assert sum(future.cancelled() for future in futures) >= 3  # one ran, one was queued, the rest never
