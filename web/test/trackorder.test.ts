// Dragging tracks into a new order within their group, and that order applied to the rows.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Group, Row } from "../src/lib/tracks";
import { applyLayout, EMPTY_LAYOUT } from "../src/timeline/trackcontrol";
import { edgeScrollSpeed, MAX_SCROLL_PX, moveTrack, sortByOrder } from "../src/timeline/trackorder";

const row = (id: number): Row => ({ kind: "slice", id, label: `track ${id}`, lanes: 1, warnings: [] });
const groups: Group[] = [
  { key: "a", label: "rank 0", rows: [row(0), row(1), row(2)], warnings: [] },
  { key: "b", label: "rank 1", rows: [row(3), row(4)], warnings: [] },
];

test("a track moves before or after another of its group; other groups' order stays", () => {
  assert.deepEqual(moveTrack([], ["t0", "t1", "t2"], "t2", "t0", false), ["t2", "t0", "t1"]);
  assert.deepEqual(moveTrack([], ["t0", "t1", "t2"], "t0", "t1", true), ["t1", "t0", "t2"]);
  assert.deepEqual(moveTrack(["t4", "t3", "t1", "t0", "t2"], ["t1", "t0", "t2"], "t2", "t1", false), ["t4", "t3", "t2", "t1", "t0"]);
  assert.deepEqual(moveTrack(["t1"], ["t0", "t1"], "t3", "t0", false), ["t1"], "a track of another group is not moved in");
  assert.deepEqual(moveTrack(["t1"], ["t0", "t1"], "t0", "t0", true), ["t1"]);
});

test("rows follow the order; rows it does not name keep their place after those it does", () => {
  const shown = applyLayout(groups, { ...EMPTY_LAYOUT, order: ["t4", "t3", "t2"] });
  assert.deepEqual(shown.map((g) => g.rows.map((r) => r.id)), [[2, 0, 1], [4, 3]]);
  assert.deepEqual(sortByOrder([1, 2, 3], String, []), [1, 2, 3]);
});

test("groups follow the group order, each named by its first track, pins still first", () => {
  const shown = applyLayout(groups, { ...EMPTY_LAYOUT, groupOrder: ["t3"], order: ["t1"] });
  assert.deepEqual(shown.map((g) => g.key), ["b", "a"]);
  // the group keeps its name when its tracks are reordered: the name is the first track before the layout
  assert.deepEqual(applyLayout(groups, { ...EMPTY_LAYOUT, groupOrder: ["t3", "t0"], order: ["t2", "t1"] }).map((g) => g.key), ["b", "a"]);
  assert.deepEqual(applyLayout(groups, { ...EMPTY_LAYOUT, groupOrder: ["t3"], pinned: ["t0"] }).map((g) => g.key), ["pinned", "b", "a"]);
});

test("a drag scrolls the track area near its edges, faster toward them, and not in between", () => {
  const [top, bottom] = [100, 700]; // 48 px edge zones
  assert.equal(edgeScrollSpeed(400, top, bottom), 0);
  assert.equal(edgeScrollSpeed(top + 48, top, bottom), 0);
  const up = [top + 40, top + 24, top + 8, top].map((y) => edgeScrollSpeed(y, top, bottom));
  assert.ok(up.every((v) => v < 0) && up.every((v, i) => i === 0 || v < up[i - 1]), `faster toward the top: ${up}`);
  assert.equal(edgeScrollSpeed(top - 30, top, bottom), -MAX_SCROLL_PX, "past the edge: full speed");
  const down = [bottom - 40, bottom - 8, bottom + 5].map((y) => edgeScrollSpeed(y, top, bottom));
  assert.ok(down.every((v, i) => v > 0 && (i === 0 || v > down[i - 1])), `faster toward the bottom: ${down}`);
  assert.ok(Math.abs(edgeScrollSpeed(101, 100, 160)) > 0 && edgeScrollSpeed(130, 100, 160) === 0, "a short area has narrower edge zones");
});
