"""Device work written on a process named for the device, without a category: placed on a device.

torch_npu's ``trace_view.json`` writes an NPU's tasks on a process named "Ascend Hardware" (its
threads are the streams, named "Stream N"), with no ``cat``. Such a slice takes the category
``PROCESSES`` gives its process (the process's name), which the table of ``kinds`` places as a
device kernel: its device is the process's pid and its stream its tid, as Kineto's convention
places device work without ``device`` / ``stream`` args. The reader learns a process's name from
its ``process_name`` metadata event; torch_npu writes those first, and tasks read before their
process's name stay unplaced (``verify`` counts them: ``device_work_unplaced``).

``Placer`` is the one rule, applied to each batch of records before it is classified, by
``ingest``, the conversion to ``.pb`` files and ``verify`` alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kinetoscope.format.kineto.trace_records import TraceRecord
from kinetoscope.model import kinds

# The version of this rule a dataset's rows were placed by (part of what a session was ingested with).
RULES_VERSION = 1  # 1: tasks of "Ascend Hardware" placed on a device
ASCEND_HARDWARE = "Ascend Hardware"
# process name -> the category its uncategorised slices take (a device kernel in ``kinds``' table)
PROCESSES = {ASCEND_HARDWARE: ASCEND_HARDWARE}


def process_named(record: TraceRecord) -> str:
    """The device process a ``process_name`` metadata record names ("" for any other record)."""
    if record.ph != "M" or record.name != kinds.PROCESS_NAME:
        return ""
    args = record.args
    if not isinstance(args, dict):
        try:
            args = json.loads(bytes(args) or b"{}")
        except (ValueError, TypeError):
            return ""
    name = args.get("name") if isinstance(args, dict) else None
    return name if isinstance(name, str) and name in PROCESSES else ""


def _key(pid: Any) -> Any:
    return pid if isinstance(pid, (int, str, float)) else str(pid)


class Placer:
    """The device processes of one trace, as its batches are read in order."""

    def __init__(self) -> None:
        self.pids: dict[Any, str] = {}

    def place(self, batch: Sequence[tuple[int, TraceRecord]]) -> None:
        """Note the batch's device processes, then give their uncategorised slices their category."""
        for _, record in batch:
            if record.ph == "M" and (named := process_named(record)):
                self.pids[_key(record.pid)] = PROCESSES[named]
        if not self.pids:
            return
        for _, record in batch:
            if record.ph == "X" and not record.cat and (category := self.pids.get(_key(record.pid))):
                record.cat = category
