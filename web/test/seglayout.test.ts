// The allocator segment view's geometry: rows in order, widths to scale or full, hits by offset.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Seg } from "../src/pages/seglayout";
import { blockAt, hexAddr, segmentRows, summaryText } from "../src/pages/seglayout";

const MIB = 2 ** 20;
const seg = (addr: number, size: number, blocks: [number, number, string][]): Seg => ({
  addr, size, stream: 0, pool: "0,0", type: "large", expandable: false, allocated_bytes: 0, requested_bytes: 0,
  pending_free_bytes: 0, free_bytes: 0, free_blocks: 0, largest_free_bytes: 0, stack: -1,
  blocks: blocks.map(([offset, n, state]) => ({ addr: addr + offset, offset, size: n, requested: n, state, stack: -1, size_exact: true })),
});
const G = { rowHeight: 20, labelWidth: 100, stripWidth: 400 };
const SEGS = [seg(0x1000, 20 * MIB, [[0, 8 * MIB, "active_allocated"], [8 * MIB, 12 * MIB, "inactive"]]), seg(0x9000000, 2 * MIB, [[0, 2 * MIB, "active_pending_free"]])];

test("segment rows are to scale of the largest, or each full width", () => {
  assert.deepEqual(segmentRows(SEGS, G, true).map((r) => [r.top, r.left, r.width]), [[0, 100, 400], [20, 100, 40]]);
  assert.deepEqual(segmentRows(SEGS, G, false).map((r) => r.width), [400, 400]);
});

test("the block under the pointer is found by its offset in the segment", () => {
  const rows = segmentRows(SEGS, G, true);
  assert.equal(blockAt(SEGS, rows, G, 100 + 100, 5)?.block?.state, "active_allocated"); // 5 MiB into the first
  assert.equal(blockAt(SEGS, rows, G, 100 + 300, 5)?.block?.state, "inactive"); // 15 MiB into it
  assert.equal(blockAt(SEGS, rows, G, 120, 25)?.block?.state, "active_pending_free");
  assert.equal(blockAt(SEGS, rows, G, 300, 25), null); // beyond the short second strip
  assert.equal(blockAt(SEGS, rows, G, 50, 25)?.block, null); // on its label: the segment, no block
  assert.equal(blockAt(SEGS, rows, G, 120, 45), null);
});

test("the summary names reserved, allocated and free memory with shares", () => {
  const text = summaryText({ reserved_bytes: 22 * MIB, segments: 2, allocated_bytes: 8 * MIB, requested_bytes: 10 * MIB - 512,
    pending_free_bytes: 2 * MIB, free_bytes: 12 * MIB, free_blocks: 1, largest_free_bytes: 12 * MIB });
  assert.equal(text, "reserved 22.0 MiB in 2 segments · allocated 8.0 MiB (36.4%; 512 B of it rounding) · pending free 2.0 MiB · " +
    "cached free 12.0 MiB (54.5%) in 1 block, largest 12.0 MiB");
  assert.equal(hexAddr("139637976727552"), "0x7f0000000000");
});
