// When a move of the view needs a new window from the server, and when the one fetched still serves it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { requestKey, serves, windowFor, windowsAhead } from "../src/timeline/fetching";
import type { ClockShifts } from "../src/lib/clocks";
import { pan, zoom } from "../src/lib/viewport";

const vp = { start: 1_000_000, end: 2_000_000, width: 1000 };

test("a window reaches a quarter of the view past each side, at the view's pixels", () => {
  assert.deepEqual(windowFor(vp), { start: 750_000, end: 2_250_000, px: 1500, truncated: false });
});

test("one zoom step or a short pan is served by the window fetched; two steps, a long pan or a capped answer are not", () => {
  const w = windowFor(vp);
  assert.ok(serves(w, vp));
  assert.ok(serves(w, zoom(vp, 0.7, 500)) && serves(w, zoom(vp, 1 / 0.7, 500)));
  assert.ok(!serves(w, zoom(zoom(vp, 0.7, 500), 0.7, 500)));
  assert.ok(serves(w, pan(vp, 150)) && !serves(w, pan(vp, 300)));
  assert.ok(!serves({ ...w, truncated: true }, vp));
  assert.ok(!serves(null, vp));
});

test("the windows fetched ahead serve the views two zoom steps in and out, about the middle", () => {
  const extent = { start: 0, end: 10_000_000 };
  const ahead = windowsAhead(vp, extent, windowFor(vp));
  assert.equal(ahead.length, 2);
  const inTwice = zoom(zoom(vp, 0.7, 500), 0.7, 500);
  const outTwice = zoom(zoom(vp, 1 / 0.7, 500), 1 / 0.7, 500);
  assert.ok(serves(ahead[0], inTwice) && !serves(windowFor(vp), inTwice));
  assert.ok(serves(ahead[1], outTwice) && !serves(windowFor(vp), outTwice));
  assert.ok(serves(ahead[0], zoom(inTwice, 0.7, 500))); // and the step after
});

test("no window is fetched ahead for a view the window held serves: out of the full view", () => {
  const full = { start: 0, end: 1_000_000, width: 1000 };
  const ahead = windowsAhead(full, { start: 0, end: 1_000_000 }, windowFor(full));
  assert.equal(ahead.length, 1);
  assert.ok(ahead[0].end - ahead[0].start < 1_000_000);
});

test("an answer fetched ahead serves only a request for the same tracks, counters, search and shifts", () => {
  const clocks = { shifting: false, shiftOf: () => 0, shiftOfCounter: () => 0 } as unknown as ClockShifts;
  const req = { tracks: [1, 2], opsOnly: [], counters: [3], matchQuery: "" };
  assert.equal(requestKey(req, clocks), requestKey({ ...req, tracks: [1, 2] }, clocks));
  assert.notEqual(requestKey(req, clocks), requestKey({ ...req, tracks: [1] }, clocks));
  assert.notEqual(requestKey(req, clocks), requestKey({ ...req, matchQuery: "nccl" }, clocks));
  const shifted = { shifting: true, shiftOf: () => 5, shiftOfCounter: () => 5 } as unknown as ClockShifts;
  assert.notEqual(requestKey(req, clocks), requestKey(req, shifted));
});
