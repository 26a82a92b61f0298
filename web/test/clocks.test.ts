// "Align clocks": shifts, labels and the link.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Meta } from "../src/lib/api";
import { ClockShifts, formatShift } from "../src/lib/clocks";
import { formatLink, parseLink } from "../src/lib/link";

const track = (id: number, rank: number) => ({ id, run: "r", rank, pid: 1, layer: "device", tid: -1, device: 0, stream: 7, events: 1, lanes: 1, name: "", session: "" });
const meta = (applied: boolean) => ({
  t0_ns: "0", span_ns: 1, event_count: 2, runs: ["r"], tracks: [track(0, 0), track(1, 3)], counters: [], warnings: [], sessions: [],
  rank_clocks: [{ run: "r", rank: 0, offset_ns: 0, uncertainty_ns: 0, samples: 8 }, { run: "r", rank: 3, offset_ns: 4_998_500, uncertainty_ns: 3_500, samples: 8 }],
  clock_offsets: [{ run: "r", rank: 3, offset_ns: applied ? 4_998_500 : 0, applied }],
}) as unknown as Meta;

test("a rank's events move by minus its clock's offset, only while aligned", () => {
  const clocks = new ClockShifts(meta(false));
  assert.equal(clocks.aligned, false); // one host: off by default
  assert.equal(clocks.available, true);
  const b = { id: "5", track: 1, lane: 0, ts: 10_000_000, dur: 5, name: "x", layer: "device" };
  assert.equal(clocks.brief(b).ts, 10_000_000);
  assert.equal(clocks.label("r", 3), "clock off by +4.998 ms ±3.5 µs (not aligned)");
  clocks.aligned = true;
  assert.equal(clocks.shiftOf(1), -4_998_500);
  assert.equal(clocks.shiftOf(0), 0);
  assert.equal(clocks.brief(b).ts, 10_000_000 - 4_998_500);
  assert.equal(b.ts, 10_000_000); // the API's brief is left as it came
  assert.equal(clocks.label("r", 3), "clock −4.998 ms ±3.5 µs (aligned)");
  assert.equal(clocks.label("r", 0), "");
  assert.equal(clocks.groupLabel([{ run: "r", rank: 3 }, undefined]), "clock −4.998 ms ±3.5 µs (aligned)");
  assert.equal(clocks.groupLabel([{ run: "r", rank: 3 }, { run: "r", rank: 0 }]), "");
});

test("an offset within its uncertainty is no clock to align, and is labelled only once aligned", () => {
  const m = meta(false) as unknown as { rank_clocks: { offset_ns: number; uncertainty_ns: number }[] };
  m.rank_clocks[1].offset_ns = -500; // the DLRM ranks as recorded: -500 ns ± 2.5 µs
  m.rank_clocks[1].uncertainty_ns = 2_500;
  const clocks = new ClockShifts(m as unknown as Meta);
  assert.equal(clocks.available, false);
  assert.equal(clocks.label("r", 3), "");
  clocks.aligned = true;
  assert.equal(clocks.label("r", 3), "clock +500 ns ±2.5 µs (aligned)");
});

test("ranks on hosts whose clocks differ are aligned by default; the link keeps the choice", () => {
  assert.equal(new ClockShifts(meta(true)).aligned, true);
  assert.equal(parseLink(formatLink({ ...parseLink(""), clocks: "0" }, "")).clocks, "0");
  assert.equal(parseLink("?clocks=1").clocks, "1");
  assert.equal(formatShift(0), "0 ns");
  assert.equal(formatShift(-1_500), "−1.5 µs");
});
