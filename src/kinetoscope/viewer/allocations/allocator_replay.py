"""The caching allocator's state at an earlier time: the snapshot's segments and blocks with the trace
entries after that time undone, newest first, as PyTorch's memory_viz rebuilds its "Allocator State
History" (``MemoryViz.js``, ``simulate_memory``).

Undoing an entry: ``alloc`` removes its block; ``free_requested`` makes the block allocated again;
``free_completed`` brings it back pending free (its size is then the requested size: the trace
does not record how the allocator rounded it); ``segment_free`` brings a segment back,
``segment_alloc`` removes it; ``segment_unmap`` / ``segment_map`` (expandable segments) map or unmap
the range, merging with or splitting the neighbouring segment of the same stream. An entry that
finds nothing to undo is counted in ``mismatches``. Free space is what the blocks leave of each
segment (the allocator's ``inactive`` blocks). Pure: no I/O, so it is tested on its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

ALLOCATED, PENDING_FREE, INACTIVE = "active_allocated", "active_pending_free", "inactive"


@dataclass
class Block:
    addr: int
    size: int
    requested: int
    state: str
    frames: str = ""
    stack_id: int = -1
    alloc_ns: int = -1  # when the trace recorded its allocation; -1 if it did not
    size_exact: bool = True


@dataclass
class Segment:
    addr: int
    size: int
    stream: int
    pool: str = ""
    kind: str = ""
    expandable: bool = False
    blocks: list[Block] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.addr + self.size


@dataclass(frozen=True)
class Entry:
    """One trace entry; ``alloc_stack_id`` / ``alloc_ns`` say, for a free, how its block was allocated."""

    action: str
    addr: int
    size: int
    stream: int = 0
    stack_id: int = -1
    alloc_stack_id: int = -1
    alloc_ns: int = -1


@dataclass
class State:
    segments: list[Segment]
    blocks: dict[int, Block]
    mismatches: int = 0
    undone: int = 0


def replay(state: State, newest_first: Iterable[Entry]) -> State:
    """``state`` (the snapshot's) with each entry undone in turn; ``newest_first`` runs backwards in time."""
    segments = sorted((replace(s, blocks=[]) for s in state.segments), key=lambda s: s.addr)
    out = State(segments, {a: replace(b) for a, b in state.blocks.items()}, state.mismatches, state.undone)
    for entry in newest_first:
        out.undone += 1
        if not _undo(out, entry):
            out.mismatches += 1
    return out


def _undo(state: State, e: Entry) -> bool:
    if e.action in ("segment_free", "segment_unmap"):
        return _map(state.segments, Segment(e.addr, e.size, e.stream), merge=e.action == "segment_unmap")
    if e.action in ("segment_alloc", "segment_map"):
        return _unmap(state.segments, e.addr, e.size, merge=e.action == "segment_map")
    return _undo_block(state.blocks, e)


def _undo_block(blocks: dict[int, Block], e: Entry) -> bool:
    if e.action == "alloc":
        return blocks.pop(e.addr, None) is not None
    if e.action == "free_requested":
        block = blocks.get(e.addr)
        if block is not None:
            block.state = ALLOCATED
        return block is not None
    if e.action == "free_completed":
        found = e.addr not in blocks
        blocks[e.addr] = Block(e.addr, e.size, e.size, PENDING_FREE, stack_id=e.alloc_stack_id, alloc_ns=e.alloc_ns,
                               size_exact=False)
        return found
    return True  # snapshot, oom: nothing to undo


def _map(segments: list[Segment], seg: Segment, *, merge: bool) -> bool:
    at = bisect.bisect_left([s.addr for s in segments], seg.addr)
    if (at < len(segments) and segments[at].addr < seg.end) or (at > 0 and segments[at - 1].end > seg.addr):
        return False  # overlaps a segment it should not
    segments.insert(at, seg)
    if merge and at + 1 < len(segments) and segments[at + 1].addr == seg.end and segments[at + 1].stream == seg.stream:
        nxt = segments.pop(at + 1)
        seg.size += nxt.size
        seg.pool, seg.kind, seg.expandable = nxt.pool, nxt.kind, nxt.expandable
    if merge and at > 0 and segments[at - 1].end == seg.addr and segments[at - 1].stream == seg.stream:
        segments[at - 1].size += segments.pop(at).size
    return True


def _unmap(segments: list[Segment], addr: int, size: int, *, merge: bool) -> bool:
    at = bisect.bisect_right([s.addr for s in segments], addr) - 1
    if at < 0:
        return False
    seg = segments[at]
    if not merge:
        if seg.addr != addr:
            return False
        segments.pop(at)
        return True
    end = addr + size
    if end > seg.end:
        return False
    if seg.addr == addr:
        seg.addr, seg.size = end, seg.size - size
        if seg.size == 0:
            segments.pop(at)
    elif seg.end == end:
        seg.size -= size
    else:
        tail = replace(seg, addr=end, size=seg.end - end, blocks=[])
        seg.size = addr - seg.addr
        segments.insert(at + 1, tail)
    return True


def place(state: State, *, one_segment_per_block: bool = False) -> tuple[list[Segment], int]:
    """The segments with their blocks in address order, free gaps as ``inactive`` blocks; and how many
    blocks fall in no segment (or overlap another). A host snapshot has a segment per block."""
    segments = state.segments
    if one_segment_per_block:
        segments = [Segment(b.addr, b.size, 0, blocks=[]) for b in state.blocks.values()]
    segments = sorted((replace(s, blocks=[]) for s in segments), key=lambda s: s.addr)
    starts = [s.addr for s in segments]
    unplaced = 0
    for block in sorted(state.blocks.values(), key=lambda b: b.addr):
        at = bisect.bisect_right(starts, block.addr) - 1
        seg = segments[at] if at >= 0 else None
        if seg is None or block.addr + block.size > seg.end or (seg.blocks and _end(seg.blocks[-1]) > block.addr):
            unplaced += 1
            continue
        seg.blocks.append(block)
    for seg in segments:
        seg.blocks = _with_gaps(seg)
    return segments, unplaced


def _end(block: Block) -> int:
    return block.addr + block.size


def _with_gaps(seg: Segment) -> list[Block]:
    out: list[Block] = []
    cursor = seg.addr
    for block in seg.blocks:
        if block.addr > cursor:
            out.append(Block(cursor, block.addr - cursor, block.addr - cursor, INACTIVE))
        out.append(block)
        cursor = _end(block)
    if cursor < seg.end:
        out.append(Block(cursor, seg.end - cursor, seg.end - cursor, INACTIVE))
    return out
