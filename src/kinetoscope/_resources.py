"""The CPUs and the memory this process may use: its CPU affinity and the system's available
memory, cut by the limits of its control group where it has any (a container's, a Slurm job's, a
systemd slice's): cgroup v2 ``cpu.max`` and ``memory.max``, v1 ``cpu.cfs_quota_us`` and
``memory.limit_in_bytes``, at the process's own group and every group above it up to the mount.

Memory in use by a group counts without its inactive file cache (the kernel reclaims it before it
kills anything), as the kubelet's working set does. Standard library only, and light at import.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
NO_LIMIT = 1 << 60  # v1 writes a number near 2^63 for "no limit"


def cpus() -> int:
    """The CPUs this process may run on: its affinity, and its groups' CPU quota, whichever is fewer."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cpu_quota()
    return max(1, min(count, quota)) if quota is not None else count


def cpu_quota() -> int | None:
    """The smallest CPU quota of the process's groups, in whole CPUs (at least 1); None: none."""
    found = []
    for group in _groups(("cpu", "cpu,cpuacct")):
        v2 = _read(group / "cpu.max").split()
        if len(v2) == 2 and v2[0] != "max":
            quota, period = _ints(v2)
        else:
            quota, period = _ints([_read(group / "cpu.cfs_quota_us"), _read(group / "cpu.cfs_period_us")])
        if quota > 0 and period > 0:
            found.append(max(1, quota // period))
    return min(found, default=None)


def available_bytes(system_available: int) -> int:
    """Memory this process may still take: ``system_available`` (the system's available memory),
    and what is left under each of its groups' memory limits, whichever is least."""
    left = [system_available]
    for group in _groups(("memory",)):
        for limit, usage, stat, inactive in (
            ("memory.max", "memory.current", "memory.stat", "inactive_file"),
            ("memory.limit_in_bytes", "memory.usage_in_bytes", "memory.stat", "total_inactive_file"),
        ):
            cap, used = _ints([_read(group / limit), _read(group / usage)])
            if 0 < cap < NO_LIMIT:
                left.append(max(0, cap - max(0, used - _stat(group / stat, inactive))))
    return min(left)


def _groups(v1_controllers: tuple[str, ...]) -> Iterator[Path]:
    """The directories of this process's groups, its own first and then each one above it up to
    the mount: the v2 group, and the v1 group of the first of ``v1_controllers`` mounted. Where a
    group's path is not visible (a container's own namespace shows its group as the mount), the
    mount itself."""
    lines = _read(PROC_CGROUP).splitlines()
    if not lines:  # not Linux, or no /proc: the mounts as they are
        lines = ["0::/", *(f"1:{name}:/" for name in v1_controllers)]
    for line in lines:
        number, controllers, path = [*line.split(":", 2), "", ""][:3]
        if number == "0" and not controllers:
            v2 = CGROUP if (CGROUP / "cgroup.controllers").exists() else CGROUP / "unified"
            yield from _upwards(v2, path.lstrip("/"))
            continue
        for name in v1_controllers:
            if set(name.split(",")) <= set(controllers.split(",")) and (CGROUP / name).is_dir():
                yield from _upwards(CGROUP / name, path.lstrip("/"))
                break


def _upwards(mount: Path, path: str) -> Iterator[Path]:
    group = mount / path if path and (mount / path).is_dir() else mount
    while True:
        yield group
        if group == mount:
            return
        group = group.parent


def _stat(path: Path, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return _ints([value, "0"])[0]
    return 0


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _ints(texts: list[str]) -> tuple[int, int]:
    try:
        return int(texts[0]), int(texts[1])
    except (ValueError, IndexError):
        return 0, 0
