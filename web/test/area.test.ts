// Area selections and the flamegraph layout.
import assert from "node:assert/strict";
import { test } from "node:test";
import { flameLayout } from "../src/widgets/flamegraph";
import { formatLink, parseLink } from "../src/lib/link";
import { formatArea, parseArea, toggleTrack, tracksCrossed } from "../src/lib/selection";

test("an area survives the link and a malformed one is dropped", () => {
  const area = { start: 1500.4, end: 9000, tracks: [3, 7] };
  assert.equal(formatArea(area), "1500,9000,3,7");
  const link = formatLink({ ...parseLink(""), area: formatArea(area) }, "");
  assert.deepEqual(parseArea(parseLink(link).area), { start: 1500, end: 9000, tracks: [3, 7] });
  assert.equal(parseArea("9000,1500,3"), undefined);
  assert.equal(parseArea("12"), undefined);
  assert.equal(parseArea("1,x,3"), undefined);
  assert.deepEqual(parseArea("0,10,4,4,-1"), { start: 0, end: 10, tracks: [4] });
});

test("a drag covers the slice tracks it crosses, and a box toggles one", () => {
  const rows = [{ y: 0, height: 26, kind: "group" }, { y: 26, height: 40, kind: "slice", id: 0 },
    { y: 66, height: 24, kind: "slice", id: 1 }, { y: 90, height: 42, kind: "counter", id: 0 }, { y: 132, height: 24, kind: "slice", id: 2 }];
  assert.deepEqual(tracksCrossed(rows, 80, 30), [0, 1]);
  assert.deepEqual(tracksCrossed(rows, 70, 140), [1, 2]);
  assert.deepEqual(tracksCrossed(rows, 5, 5), []);
  assert.deepEqual(toggleTrack([0, 2], 1), [0, 1, 2]);
  assert.deepEqual(toggleTrack([0, 1, 2], 1), [0, 2]);
});

test("the flamegraph lays children left to right, largest first, and zooms into a frame", () => {
  // root(100) -> a(60) -> c(20); root -> b(40)
  const nodes = { parent: [-1, 0, 0, 2], name: ["(selection)", "b", "a", "c"], depth: [0, 1, 1, 2],
    count: [0, 1, 1, 2], total_ns: [100, 40, 60, 20], self_ns: [0, 40, 40, 20] };
  const whole = flameLayout(nodes).map((r) => [nodes.name[r.node], r.x, r.w, r.level]);
  assert.deepEqual(whole, [["(selection)", 0, 1, 0], ["a", 0, 0.6, 1], ["c", 0, 0.2, 2], ["b", 0.6, 0.4, 1]]);
  const zoomed = flameLayout(nodes, 2).map((r) => [nodes.name[r.node], r.x, r.w, r.level]);
  assert.deepEqual(zoomed, [["(selection)", 0, 1, 0], ["a", 0, 1, 1], ["c", 0, 20 / 60, 2]]);
});

test("a flow hop takes the server's first event one hop away, cycles on repeat, and the latency is HTA's", async () => {
  const { flowHop, launchLatencyNs, latencyLabel, nextAlternative } = await import("../src/lib/navigation");
  const b = (id: number, ts: number, hop: number, dur = 5) => ({ id: String(id), track: 0, lane: 0, ts, dur, name: `e${id}`, layer: "runtime", hop });
  // the server lists the calls that launched device work first (`/api/flows`): no second rule here
  const chain = { event: b(1, 0, 0), upstream: [b(9, -50, 1), b(8, -80, 2)], downstream: [b(3, 40, 1), b(2, 20, 1), b(4, 30, 2)], edges: [] };
  assert.equal(flowHop(chain, "down")?.id, "3");
  assert.equal(flowHop(chain, "up")?.id, "9");
  assert.equal(flowHop({ ...chain, downstream: [] }, "down"), undefined);
  assert.equal(flowHop(null, "up"), undefined);
  const alternatives = [b(3, 40, 1), b(2, 20, 1), b(5, 50, 1)];
  assert.equal(nextAlternative(alternatives, "3")?.id, "2");
  assert.equal(nextAlternative(alternatives, "5")?.id, "3");
  assert.equal(nextAlternative([b(3, 40, 1)], "3"), undefined);
  assert.equal(launchLatencyNs(b(1, 100, 0, 5_000), b(2, 17_500, 1)), 12_400);
  assert.equal(latencyLabel(12_400), "launch +12.4 µs");
  assert.equal(latencyLabel(-800), "launch −800 ns");
});
