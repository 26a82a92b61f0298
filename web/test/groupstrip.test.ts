// The busy share per pixel of a folded group's header strip, against hand counts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { WindowData } from "../src/lib/api";
import { busyShare } from "../src/timeline/groupstrip";

type Slice = [track: number, lane: number, ts: number, dur: number];
type Block = [track: number, ts: number, end: number, busy: number];
const data = (slices: Slice[], blocks: Block[] = []): WindowData => ({
  start_ns: 0, end_ns: 400, px_ns: 100, bucket_ns: 100, strings: ["x"], truncated: false,
  slices: { id: slices.map((_, i) => String(i)), track: slices.map((s) => s[0]), lane: slices.map((s) => s[1]), ts: slices.map((s) => s[2]),
    dur: slices.map((s) => s[3]), name: slices.map(() => 0) },
  blocks: { track: blocks.map((b) => b[0]), lane: blocks.map(() => 0), ts: blocks.map((b) => b[1]), end: blocks.map((b) => b[2]),
    count: blocks.map(() => 3), busy: blocks.map((b) => b[3]), name: blocks.map(() => 0) },
});

test("overlapping and nested slices, on one track or several, count once", () => {
  // track 1: [0, 150) with a child [20, 60); track 2: [100, 250); track 3 (not in the group): [300, 400)
  const d = data([[1, 0, 0, 150], [1, 1, 20, 40], [2, 0, 100, 150], [3, 0, 300, 100]]);
  assert.deepEqual([...busyShare(d, new Set([1, 2]), 0, 100, 4)], [1, 1, 0.5, 0]);
  assert.deepEqual([...busyShare(d, new Set([2]), 0, 100, 4)], [0, 1, 0.5, 0]);
  // the view may start mid-slice and the pixels may be fractional
  assert.deepEqual([...busyShare(d, new Set([1]), 50, 50, 3)], [1, 1, 0]);
});

test("a merged block gives at least its own busy share, never more than the whole pixel", () => {
  const d = data([[1, 0, 0, 30]], [[2, 0, 100, 60], [2, 100, 200, 20], [1, 100, 200, 40], [4, 200, 300, 100]]);
  const share = busyShare(d, new Set([1, 2]), 0, 100, 3);
  assert.deepEqual([...share], [0.6, 0.4, 0]);
  assert.deepEqual([...busyShare(data([]), new Set([1]), 0, 100, 2)], [0, 0]);
});
