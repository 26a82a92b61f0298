"""Hand counts over real torch.profiler traces in tests/data (recorded by others; origins and
licences in each folder's README): the events of the raw JSON, read with the standard library."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"


def copied(trace: Path, folder: Path) -> Path:
    """The trace, copied alone into ``folder/traces`` (what the case gives to kinetoscope)."""
    (folder / "traces").mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(trace, folder / "traces" / trace.name))


def copying(trace: Path) -> Callable[[Path], Path]:
    """A case's ``build``: the trace copied alone into the case's folder."""
    return lambda folder: copied(trace, folder)


def slices(trace: Path) -> list[dict[str, Any]]:
    with gzip.open(trace) as handle:
        document = json.load(handle)
    events = document["traceEvents"] if isinstance(document, dict) else document
    return [e for e in events if e.get("ph") == "X"]


def ns(us: float) -> int:
    return round(us * 1000)


def per_name(events: list[dict[str, Any]], category: str) -> tuple[Counter[str], Counter[str]]:
    """(calls, total ns) per name of the slices of one category."""
    calls: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for event in events:
        if event.get("cat") == category:
            calls[event["name"]] += 1
            total[event["name"]] += ns(event["dur"])
    return calls, total
