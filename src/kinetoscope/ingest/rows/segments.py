"""The caching allocator's segments at a snapshot, and the trace entries that lead to them.

A snapshot's ``segments`` are the memory the allocator reserved from the device at export, each
cut into ``blocks`` (``active_allocated``, ``active_pending_free``: freed but waiting on a stream
that used it, ``inactive``: cached free). They become the ``segments`` table, one row per block.
Its ``device_traces`` (alloc, free and segment actions, in order) become the ``allocator_trace``
table, so the viewer can rebuild the state at an earlier time by undoing the entries after it,
as PyTorch's memory_viz does. Older snapshots give blocks no ``address`` (memory_viz takes the
segment address plus the sizes of the blocks before it, and so does this); a segment lacking
``address`` takes its first block's, one lacking ``total_size`` the sum of its block sizes.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from kinetoscope._errors import FormatError
from kinetoscope.dataset.schema import ALLOCATOR_TRACE, SEGMENTS
from kinetoscope.ingest.rows.allocations import frame_labels, is_host
from kinetoscope.ingest.rows.nesting import FrameTree
from kinetoscope.model.scalars import NO_ID


def _int(value: Any, default: int = NO_ID) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def frames_text(frames: Any) -> str:
    """``name file:line`` per frame, innermost first (as snapshots list them), one per line."""
    if not isinstance(frames, list):
        return ""
    return "\n".join(
        f"{f.get('name', '')} {f.get('filename', '')}:{f.get('line', -1)}" for f in frames if isinstance(f, dict)
    )


def _pool(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def _segment_rows(where: str, segment: Any, host: bool) -> list[dict[str, Any]]:
    if not isinstance(segment, dict):
        raise FormatError(f"{where} is not a dict")
    blocks = segment.get("blocks", [])
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise FormatError(f"{where}: 'blocks' is not a list of dicts")
    addr = _int(segment.get("address"), _int(blocks[0].get("address")) if blocks else NO_ID)
    if addr < 0:
        raise FormatError(f"{where} has no 'address' (nor a block with one): it cannot be placed")
    sizes = [_int(b.get("size"), 0) for b in blocks]
    common = {
        "device": NO_ID if host else _int(segment.get("device"), 0),
        "segment_addr": addr,
        "segment_size_bytes": _int(segment.get("total_size"), sum(sizes)),
        "stream": _int(segment.get("stream"), 0),
        "pool": _pool(segment.get("segment_pool_id")),
        "segment_type": str(segment.get("segment_type", "")),
        "is_expandable": bool(segment.get("is_expandable", False)),
    }
    if not blocks:
        return [{**common, "block_addr": NO_ID, "block_size_bytes": 0, "requested_size_bytes": 0, "state": "",
                 "frames": ""}]
    rows, at = [], addr
    for block, size in zip(blocks, sizes, strict=True):
        block_addr = _int(block.get("address"), at)
        rows.append({**common, "block_addr": block_addr, "block_size_bytes": size,
                     "requested_size_bytes": _int(block.get("requested_size"), size),
                     "state": str(block.get("state", "")), "frames": frames_text(block.get("frames"))})
        at = block_addr + size
    return rows


def segment_table(snapshot: dict[str, Any], name: str, session: str) -> pa.Table:
    """The ``segments`` rows of one snapshot (named ``name``): one per block of every segment."""
    host = is_host(snapshot)
    rows = [r for i, seg in enumerate(snapshot.get("segments", [])) for r in _segment_rows(f"segments[{i}]", seg, host)]
    columns = {c: [r[c] for r in rows] for c in SEGMENTS.file_schema().names if c not in ("session", "snapshot")}
    return pa.table({"session": [session] * len(rows), "snapshot": [name] * len(rows), **columns},
                    schema=SEGMENTS.file_schema())


def trace_table(snapshot: dict[str, Any], name: str, session: str, tree: FrameTree, id_base: int) -> pa.Table:
    """The ``allocator_trace`` rows of one snapshot: every ``device_traces`` entry, in order per device.

    Stacks join the frames tree (``stack_id``), as the allocations' do."""
    host = is_host(snapshot)
    cols: dict[str, list[Any]] = {c: [] for c in ALLOCATOR_TRACE.file_schema().names}
    # unpickled frames share their dicts (through the pickle's memo): a stack is known by their ids
    paths: dict[tuple[int, ...], int] = {}
    for device, trace in enumerate(snapshot.get("device_traces", [])):
        for seq, entry in enumerate(trace):
            time_us = entry.get("time_us")
            frames = entry.get("frames")
            key = tuple(map(id, frames)) if isinstance(frames, list) else ()
            stack = paths.get(key)
            if stack is None:
                stack = paths[key] = tree.path(frame_labels(frames))
            cols["device"].append(NO_ID if host else device)
            cols["seq"].append(seq)
            cols["action"].append(str(entry.get("action")))
            cols["ts_ns"].append(_int(time_us) * 1000 if _int(time_us) >= 0 else NO_ID)
            cols["addr"].append(_int(entry.get("addr"), 0))
            cols["size_bytes"].append(_int(entry.get("size"), 0))
            cols["stream"].append(_int(entry.get("stream"), 0))
            cols["stack_id"].append(stack + id_base if stack >= 0 else NO_ID)
    count = len(cols["seq"])
    cols["session"], cols["snapshot"] = [session] * count, [name] * count
    return pa.table(cols, schema=ALLOCATOR_TRACE.file_schema())
