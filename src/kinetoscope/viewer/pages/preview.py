"""A preview of a big raw trace: a copy of its first events, shown while the whole trace is prepared.

`cut_prefix` writes a trace holding the first events of another, in file order, up to a byte
budget: the top-level keys of the original (``deviceProperties``, ``distributedInfo``, ...,
read from its head and, for an uncompressed trace, its tail), its first events, and the process
and thread names (``ph: M``) found in its last MiB, where Kineto writes them. The copy is a whole
trace (its event array closed), so importing it reports no truncation. Kineto does not write
events in time order (a rank's framework ops first, then runtime calls and kernels), so a prefix
holds whole tracks early in the file and misses those written later: the page says so.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinetoscope.format.kineto.kineto_json import iter_trace_events, read_ends, read_head_values
from kinetoscope.format.kineto.trace_source import is_gzip
from kinetoscope.format.problems import ProblemLog

PREVIEW_BYTES = 10 << 20  # of events written into the preview trace
BATCH_EVENTS = 1024
_NAMES = re.compile(rb'"ph"\s*:\s*"M"')  # process and thread names, sort indices: metadata events


@dataclass(frozen=True)
class PrefixCut:
    """What `cut_prefix` wrote: `events` of the source's first events (`names`: metadata events
    from its tail added), `complete` when that was every event of the source."""

    path: Path
    source: Path
    events: int
    names: int
    complete: bool
    source_bytes: int


def cut_prefix(source: Path, out: Path, budget_bytes: int = PREVIEW_BYTES) -> PrefixCut:
    """Writes into `out` a trace of `source`'s first events, about `budget_bytes` of them."""
    ends = read_head_values(source) if is_gzip(source) else read_ends(source, _NAMES)
    metadata = {k: v for k, v in ends.metadata.items() if k != "traceEvents"}
    written = kept = 0
    complete = True
    seen_names: set[str] = set()
    with open(out, "wb") as sink:
        sink.write(_dumps(metadata)[:-1] + (b', "traceEvents": [\n' if metadata else b'"traceEvents": [\n'))
        batches = iter_trace_events(source, ProblemLog(), BATCH_EVENTS)
        with contextlib.closing(batches):  # type: ignore[type-var]  # a generator, whose close ends the read
            for batch in batches:
                if written >= budget_bytes:
                    complete = False
                    break
                events = [event for _, event in batch]
                seen_names.update(_name_key(e) for e in events if e.get("ph") == "M")
                written += _write_events(sink, events, first=kept == 0)
                kept += len(events)
        names = [] if complete else [e for e in ends.last_events if _name_key(e) not in seen_names]
        _write_events(sink, names, first=kept == 0)
        sink.write(b"\n]}\n")
    return PrefixCut(out, source, kept, len(names), complete, source.stat().st_size)


def _name_key(event: dict[str, Any]) -> str:
    return f"{event.get('name')}|{event.get('pid')}|{event.get('tid')}"


def _write_events(sink: Any, events: Iterable[dict[str, Any]], *, first: bool) -> int:
    body = _dumps(list(events))[1:-1]
    if not body:
        return 0
    sink.write(body if first else b",\n" + body)
    return len(body)


def _dumps(value: Any) -> bytes:
    """JSON bytes; integers beyond 64 bits (which orjson refuses) go through the standard library."""
    try:
        import orjson
    except ImportError:
        return json.dumps(value, separators=(",", ":")).encode()
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()
