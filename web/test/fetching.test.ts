// When a move of the view needs a new window from the server, and when the one fetched still serves it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { serves, windowFor } from "../src/timeline/fetching";
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
