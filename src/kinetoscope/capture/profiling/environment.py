"""Facts about the host and process a session runs in: accelerator, instance, rank."""

from __future__ import annotations

import os
import platform
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity

INSTANCE_ENV = "KINETOSCOPE_INSTANCE_ID"

# Files where a cloud host records its instance id locally (no network call).
_INSTANCE_ID_FILES = (
    ("cloud-init", Path("/var/lib/cloud/data/instance-id")),
    ("dmi", Path("/sys/devices/virtual/dmi/id/board_asset_tag")),
)

_ACTIVITY_BY_ACCELERATOR = {
    "cuda": "CUDA",
    "xpu": "XPU",
    "mtia": "MTIA",
    "hpu": "HPU",
    "privateuseone": "PrivateUse1",
}


def accelerator_type() -> str | None:
    """The accelerator's device type ("cuda", "xpu", ...), or None on a CPU-only host."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        current = accelerator.current_accelerator()
        return None if current is None else current.type
    return "cuda" if torch.cuda.is_available() else None


def activities() -> list[ProfilerActivity]:
    """The ``ProfilerActivity`` list for this host: CPU plus the accelerator's activity where one exists."""
    found = [ProfilerActivity.CPU]
    kind = accelerator_type()
    name = _ACTIVITY_BY_ACCELERATOR.get(kind or "")
    if name is not None and hasattr(ProfilerActivity, name):
        found.append(getattr(ProfilerActivity, name))
    return found


def synchronize() -> None:
    """Wait for the accelerator to finish queued work; nothing to wait for on a CPU-only host."""
    if accelerator_type() is None:
        return
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        accelerator.synchronize()
    else:
        torch.cuda.synchronize()


def device_count() -> int:
    kind = accelerator_type()
    if kind is None:
        return 0
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "device_count"):
        return int(accelerator.device_count())
    return int(torch.cuda.device_count())


def accelerator_runtime() -> str:
    if accelerator_type() == "cuda":
        if torch.version.hip:
            return f"rocm {torch.version.hip}"
        return f"cuda {torch.version.cuda}"
    return accelerator_type() or ""


@dataclass(frozen=True)
class Instance:
    instance_id: str
    source: str


def instance() -> Instance:
    """The instance id: $KINETOSCOPE_INSTANCE_ID, else a locally recorded cloud id, else the host name."""
    override = os.environ.get(INSTANCE_ENV, "").strip()
    if override:
        return Instance(override, "env")
    for source, path in _INSTANCE_ID_FILES:
        value = _read_small(path)
        if value and _looks_like_instance_id(value):
            return Instance(value, source)
    return Instance(socket.gethostname() or "localhost", "hostname")


def _read_small(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[:256].strip()
    except OSError:
        return ""


def _looks_like_instance_id(value: str) -> bool:
    # AWS ("i-0abc..."), GCP (numeric), Azure (uuid); DMI asset tags on other hosts are often junk.
    return value.startswith("i-") or value.isdigit() or value.count("-") == 4


@dataclass(frozen=True)
class DistInfo:
    rank: int
    local_rank: int
    world_size: int
    backend: str
    known: bool


def dist_info() -> DistInfo:
    """Rank, local rank, world size and backend from torch.distributed, else from torchrun's variables."""
    env_rank = _env_int("RANK")
    local_rank = _env_int("LOCAL_RANK")
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        rank = dist.get_rank()
        return DistInfo(
            rank=rank,
            local_rank=local_rank if local_rank is not None else rank,
            world_size=dist.get_world_size(),
            backend=str(dist.get_backend()),
            known=True,
        )
    world = _env_int("WORLD_SIZE")
    if env_rank is not None:
        return DistInfo(env_rank, local_rank if local_rank is not None else env_rank, world or 1, "", True)
    return DistInfo(0, 0, 1, "", False)


def _env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


# Environment variables that name the job a process belongs to, the most specific first: the
# user's own, torchrun's rendezvous id (a fresh uuid per single-node launch), the batch schedulers'.
JOB_ID_VARIABLES = ("KINETOSCOPE_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID")
_MAX_JOB_ID_CHARS = 128


def job_identity() -> tuple[str, str]:
    """(job id, where it came from) for this process; ("", "") when nothing names one.

    Every rank of one job gets the same id: from the variables above, else the rendezvous address
    (``MASTER_ADDR:MASTER_PORT``, shared by two jobs only if they reuse it). A process outside any
    distributed job gets none: processes profiled side by side without torch.distributed stay
    one run, as before.
    """
    for name in JOB_ID_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value and value.lower() != "none":
            return value[:_MAX_JOB_ID_CHARS], name
    master = os.environ.get("MASTER_ADDR", ""), os.environ.get("MASTER_PORT", "")
    if all(master):
        return f"{master[0]}:{master[1]}"[:_MAX_JOB_ID_CHARS], "master"
    return "", ""


def python_version() -> str:
    return sys.version.split()[0]


def platform_name() -> str:
    return platform.platform()
