// The segments view's clock: a snapshot recorded on another day reads its times from its own history.
import assert from "node:assert/strict";
import { test } from "node:test";
import { farClock, roughSpan, steppable } from "../src/pages/segments";

test("a history an hour or more from the run's start is on another clock", () => {
  assert.equal(farClock(null), false);
  assert.equal(farClock(100_000), false);
  assert.equal(farClock(-3600e9 - 1), true);
  assert.equal(farClock(3_324_226e9), true);
  assert.equal(roughSpan(3_324_226e9), "38.5 days");
  assert.equal(roughSpan(5400e9), "1.5 hours");
  assert.equal(roughSpan(200 * 365.25 * 86400e9), "200 years");
});

test("a history more than 2^62 ns from the run's start cannot be stepped through (the API refuses such times)", () => {
  assert.equal(steppable(-1.76e18, -1.75e18), true); // a boot clock beside an epoch one
  assert.equal(steppable(6.3e18, 6.31e18), false); // 200 years away
  assert.equal(steppable(null, null), false);
});
