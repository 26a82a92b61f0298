// The segments view's clock: a snapshot recorded on another day reads its times from its own history.
import assert from "node:assert/strict";
import { test } from "node:test";
import { farClock, roughSpan } from "../src/pages/segments";

test("a history an hour or more from the run's start is on another clock", () => {
  assert.equal(farClock(null), false);
  assert.equal(farClock(100_000), false);
  assert.equal(farClock(-3600e9 - 1), true);
  assert.equal(farClock(3_324_226e9), true);
  assert.equal(roughSpan(3_324_226e9), "38.5 days");
  assert.equal(roughSpan(5400e9), "1.5 hours");
});
