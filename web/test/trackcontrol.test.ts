// Track control: pins, hidden tracks, the name filter, the lane limit and their link form.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Group, Row } from "../src/lib/tracks";
import { applyLayout, EMPTY_LAYOUT, findTracks, formatLayout, parseLayout } from "../src/timeline/trackcontrol";

const row = (id: number, label: string, lanes = 1, kind: "slice" | "counter" = "slice"): Row => ({ kind, id, label, lanes, warnings: [] });
const groups: Group[] = [
  { key: "a", label: "rank 0 · pid 1", rows: [row(0, "thread 1 (python3)", 60), row(1, "thread 1 · runtime", 2), row(0, "CPU 0 utilisation (%)", 1, "counter")], warnings: [] },
  { key: "b", label: "rank 1 · pid 2", rows: [row(2, "thread 2 (python3)", 48), row(3, "stream 7", 1)], warnings: [] },
];

test("pinned rows come first in pin order, hidden rows go, the filter keeps matching rows", () => {
  const shown = applyLayout(groups, { ...EMPTY_LAYOUT, pinned: ["t3", "t0"], hidden: ["t1"] });
  assert.deepEqual(shown.map((g) => [g.key, g.rows.map((r) => r.label)]), [
    ["pinned", ["rank 1 · pid 2 · stream 7", "rank 0 · pid 1 · thread 1 (python3)"]],
    ["a", ["CPU 0 utilisation (%)"]], ["b", ["thread 2 (python3)"]]]);
  const filtered = applyLayout(groups, { ...EMPTY_LAYOUT, filter: "Runtime" });
  assert.deepEqual(filtered.map((g) => [g.key, g.rows.map((r) => r.id)]), [["a", [1]]]);
  assert.deepEqual(applyLayout(groups, { ...EMPTY_LAYOUT, filter: "rank 1" }).map((g) => g.key), ["b"]);
});

test("hiding Python frames gives a thread its ops-only lanes, before the lane limit", () => {
  const track = { id: 0, run: "r", rank: 0, pid: 1, layer: "framework", tid: 1, device: -1, stream: -1, events: 9, lanes: 60, name: "", session: "s", ops_lanes: 7 };
  const withTrack: Group[] = [{ key: "a", label: "rank 0", rows: [{ ...row(0, "thread 1", 60), track }, row(1, "stream 7", 2)], warnings: [] }];
  const rows = applyLayout(withTrack, { ...EMPTY_LAYOUT, hidePython: true })[0].rows;
  assert.deepEqual(rows.map((r) => [r.lanes, !!r.opsOnly]), [[7, true], [2, false]]);
  assert.deepEqual(applyLayout(withTrack, { ...EMPTY_LAYOUT, hidePython: true, laneLimit: 4 })[0].rows.map((r) => r.lanes), [4, 2]);
});

test("a thread with more than 8 lanes of Python frames shows its ops only until it is unfolded", () => {
  const track = { id: 0, run: "r", rank: 0, pid: 1, layer: "framework", tid: 1, device: -1, stream: -1, events: 9, lanes: 40, name: "", session: "s", ops_lanes: 3 };
  const deep = track;
  const shallow = { ...track, id: 1, lanes: 10, ops_lanes: 3 };
  const g: Group[] = [{ key: "a", label: "rank 0", rows: [{ ...row(0, "main", 40), track: deep }, { ...row(1, "worker", 10), track: shallow }], warnings: [] }];
  assert.deepEqual(applyLayout(g, EMPTY_LAYOUT)[0].rows.map((r) => [r.lanes, !!r.opsOnly]), [[3, true], [10, false]]);
  assert.deepEqual(applyLayout(g, { ...EMPTY_LAYOUT, pythonOpen: ["t0"] })[0].rows.map((r) => r.lanes), [40, 10]);
});

test("the lane limit caps every track's lanes", () => {
  const lanes = applyLayout(groups, { ...EMPTY_LAYOUT, laneLimit: 4 }).flatMap((g) => g.rows.map((r) => r.lanes));
  assert.deepEqual(lanes, [4, 2, 1, 4, 1]);
});

test("the layout survives the link, and bad keys are dropped", () => {
  const layout = { pinned: ["t3", "c0"], hidden: ["t1"], filter: "stream", laneLimit: 8, hidePython: true, order: ["t2", "t0"], groupOrder: ["t2"], pythonOpen: ["t4"] };
  assert.deepEqual(parseLayout(formatLayout(layout)), layout);
  assert.deepEqual(formatLayout(EMPTY_LAYOUT), { pin: undefined, hide: undefined, tfilter: undefined, lanes: undefined, nopy: undefined, order: undefined, gorder: undefined, pyopen: undefined });
  assert.deepEqual(parseLayout({ pin: "t1,x9,<b>", lanes: "-3", nopy: "yes", order: "t2,;drop" }),
    { pinned: ["t1"], hidden: [], filter: "", laneLimit: 0, hidePython: false, order: ["t2"], groupOrder: [], pythonOpen: [] });
});

test("the finder matches the group and track name, names starting with the text first", () => {
  assert.deepEqual(findTracks(groups, "STREAM").map((x) => x.row.id), [3]);
  assert.deepEqual(findTracks(groups, "thread").map((x) => x.row.id), [0, 1, 2]);
  assert.deepEqual(findTracks(groups, "  "), []);
});
