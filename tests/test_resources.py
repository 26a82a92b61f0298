"""The CPUs and memory this process may use: a control group's CPU quota and memory limit (v2, v1),
at the process's own group or any group above it, cut the host's figures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kinetoscope import _resources as resources

GiB = 1 << 30


def _cgroup(root: Path, monkeypatch: pytest.MonkeyPatch, membership: str, files: dict[str, str]) -> None:
    """A cgroup mount at ``root`` holding ``files``, and ``membership`` as /proc/self/cgroup."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    (root / "proc-self-cgroup").write_text(membership)
    monkeypatch.setattr(resources, "CGROUP", root)
    monkeypatch.setattr(resources, "PROC_CGROUP", root / "proc-self-cgroup")


def _affinity() -> int:
    return len(os.sched_getaffinity(0))


V2_JOB = "0::/slurm/job_7/step_0\n"
V1_JOB = "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n"


@pytest.mark.parametrize(
    ("membership", "files", "quota"),
    [
        ("0::/\n", {"cgroup.controllers": "cpu", "cpu.max": "100000 100000"}, 1),  # v2, the namespace's root
        ("0::/\n", {"cgroup.controllers": "cpu", "cpu.max": "250000 100000"}, 2),  # two and a half, rounded down
        ("0::/\n", {"cgroup.controllers": "cpu", "cpu.max": "max 100000"}, None),  # no quota
        # v2 without a namespace: the job's own group, or one above it, sets the quota
        (V2_JOB, {"cgroup.controllers": "cpu", "slurm/job_7/step_0/cpu.max": "300000 100000"}, 3),
        (V2_JOB, {"cgroup.controllers": "cpu", "slurm/job_7/cpu.max": "200000 100000",
                  "slurm/job_7/step_0/cpu.max": "max 100000"}, 2),
        # v1: cpu,cpuacct mounted together, the group's path visible or not (a container's namespace)
        (V1_JOB, {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000",
                  "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000"}, 3),
        (V1_JOB, {"cpu,cpuacct/cpu.cfs_quota_us": "200000", "cpu,cpuacct/cpu.cfs_period_us": "100000"}, 2),
        (V1_JOB, {"cpu,cpuacct/cpu.cfs_quota_us": "-1", "cpu,cpuacct/cpu.cfs_period_us": "100000"}, None),
        ("", {}, None),  # no /proc/self/cgroup and no files
    ],
)
def test_a_cpu_quota_caps_the_cpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, membership: str, files: dict[str, str], quota: int | None
) -> None:
    _cgroup(tmp_path, monkeypatch, membership, files)
    assert resources.cpu_quota() == quota
    assert resources.cpus() == (min(_affinity(), quota) if quota else _affinity())


def test_a_memory_limit_caps_what_is_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # v2, a job's group under a slice: the slice's limit is the smaller one; the inactive file cache
    # of the group does not count as used
    _cgroup(tmp_path / "v2", monkeypatch, V2_JOB, {
        "cgroup.controllers": "memory",
        "slurm/memory.max": str(8 * GiB), "slurm/memory.current": str(3 * GiB),
        "slurm/memory.stat": f"anon {GiB}\ninactive_file {2 * GiB}\n",
        "slurm/job_7/step_0/memory.max": "max", "slurm/job_7/step_0/memory.current": str(GiB),
    })  # fmt: skip
    assert resources.available_bytes(64 * GiB) == 7 * GiB  # 8 GiB less 3 GiB used, of which 2 GiB cache
    assert resources.available_bytes(4 * GiB) == 4 * GiB  # the system's figure when it is smaller
    # v1, the group's path not visible (a container's namespace): the mount's files
    v1 = {"memory/memory.limit_in_bytes": str(5 * GiB), "memory/memory.usage_in_bytes": str(GiB),
          "memory/memory.stat": "total_inactive_file 0\n"}  # fmt: skip
    _cgroup(tmp_path / "v1", monkeypatch, V1_JOB, v1)
    assert resources.available_bytes(64 * GiB) == 4 * GiB
    _cgroup(tmp_path / "v1-none", monkeypatch, V1_JOB, {**v1, "memory/memory.limit_in_bytes": str(1 << 62)})
    assert resources.available_bytes(64 * GiB) == 64 * GiB  # v1's "no limit"
    _cgroup(tmp_path / "over", monkeypatch, V1_JOB, {**v1, "memory/memory.usage_in_bytes": str(6 * GiB)})
    assert resources.available_bytes(64 * GiB) == 0  # over the limit already
