// Unit tests of the analysis row links, the counter scales and modes, and the Info page's text.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { CounterTrack } from "../src/lib/api";
import { counterMode, counterScale, formatCounterDisplays, fraction, formatCounterValue, modeValues, parseCounterDisplays, rates, sampleAt,
  scaleOf, setCounterDisplays } from "../src/timeline/counters";
import { deviceMemory, recorded } from "../src/widgets/info";
import { distinctLabels, labelEnds } from "../src/lib/labels";
import { analysisTarget, AROUND_NS, targetLink } from "../src/lib/rowlinks";

test("an analysis row leads to its example event, else to the time it names", () => {
  assert.deepEqual(analysisTarget(["name", "example_id"], { name: "gemm", example_id: "42" }), { id: "42" });
  assert.deepEqual(analysisTarget(["name", "example_id"], { name: "gemm", example_id: "9007199254740993" }), { id: "9007199254740993" });
  assert.equal(analysisTarget(["name", "example_id"], { name: "x", example_id: "-1" }), null);
  assert.deepEqual(analysisTarget(["rank", "peak_ts_ns"], { rank: 0, peak_ts_ns: 1_000_000 }), { ts: 1_000_000 });
  assert.equal(analysisTarget(["rank", "total_ns"], { rank: 0, total_ns: 5 }), null);
  assert.equal(targetLink({ id: "9007199254740993" }), "?page=timeline&sel=9007199254740993");
  assert.equal(targetLink({ ts: 1_000_000 }), `?page=timeline&start=${1_000_000 - AROUND_NS}&end=${1_000_000 + AROUND_NS}`);
  assert.equal(targetLink({ ts: 10 }), `?page=timeline&start=0&end=${10 + AROUND_NS}`);
});

test("counter values read in the row's one unit", () => {
  assert.equal(formatCounterValue(3 * 2 ** 30, "bytes"), "3.0 GiB");
  assert.equal(formatCounterValue(2 ** 20, "bytes/s"), "1.0 MiB/s");
  assert.equal(formatCounterValue(37.25, "%"), "37.3%");
  assert.equal(formatCounterValue(0.0123, "W"), "0.012 W");
});

test("a wide range gets a log scale, a narrow one a linear scale from zero", () => {
  assert.deepEqual(scaleOf([0, 10, 20]), { lo: 0, hi: 20, log: false });
  const wide = scaleOf([0, 1e3, 5e9]);
  assert.deepEqual(wide, { lo: 1e3, hi: 5e9, log: true });
  assert.equal(fraction(wide, 0), 0);
  assert.equal(fraction(wide, 5e9), 1);
  assert.ok(Math.abs(fraction(wide, Math.sqrt(1e3 * 5e9)) - 0.5) < 1e-9);
  assert.deepEqual(scaleOf([-5, 5]), { lo: -5, hi: 5, log: false }); // negatives stay linear
  assert.deepEqual(scaleOf([7, 7]), { lo: 0, hi: 7, log: false });
});

test("a chosen scale: log even for a narrow range (never with negatives), linear even for a wide one", () => {
  assert.deepEqual(scaleOf([0, 10, 20], "log"), { lo: 10, hi: 20, log: true });
  assert.deepEqual(scaleOf([0, 1e3, 5e9], "linear"), { lo: 0, hi: 5e9, log: false });
  assert.deepEqual(scaleOf([-5, 5], "log"), { lo: -5, hi: 5, log: false });
  assert.deepEqual(scaleOf([0, 0], "log"), { lo: 0, hi: 1, log: false });
  assert.deepEqual(scaleOf([7, 7], "log"), { lo: 7, hi: 70, log: true });
});

test("each counter's mode and scale go into the link text and come back from it", () => {
  const c = (id: number) => ({ id }) as CounterTrack;
  setCounterDisplays("c7:rate,c5:line:log,c9:step:linear,c3:bogus,t4:line,c2:line:log:x,c8:step:auto");
  assert.deepEqual([counterMode(c(5)), counterScale(c(5))], ["line", "log"]);
  assert.deepEqual([counterMode(c(3)), counterScale(c(3))], ["step", "auto"], "an unknown mode is left out");
  assert.equal(formatCounterDisplays(), "c5:line:log,c7:rate,c9:step:linear", "defaults (c8) are not written");
  assert.deepEqual([...parseCounterDisplays("c1:line").entries()], [[1, { mode: "line", scale: "auto" }]]);
  setCounterDisplays(undefined);
  assert.equal(formatCounterDisplays(), undefined);
});

test("modes: steps draw each pixel's peak, lines its last sample, rates the change per second", () => {
  const s = { ts: [0, 1e9, 3e9], min: [0, 5, 1], max: [2, 10, 4], last: [1, 10, 4] };
  assert.deepEqual(modeValues(s, "step"), [2, 10, 4]);
  assert.deepEqual(modeValues(s, "line"), [1, 10, 4]);
  assert.deepEqual(rates(s.ts, s.last), [0, 9, -3]);
  assert.equal(sampleAt(s.ts, -1), -1);
  assert.equal(sampleAt(s.ts, 2e9), 1);
  assert.equal(sampleAt(s.ts, 9e9), 2);
});

test("the Info page says what was not recorded", () => {
  assert.equal(recorded(""), "not recorded");
  assert.equal(recorded(-1), "not recorded");
  assert.equal(recorded(12345, true), "12,345");
  assert.equal(recorded(4000), "4000"); // a pid is no count
  assert.equal(recorded("nccl"), "nccl");
  assert.equal(deviceMemory('{"0":34089730048}'), "device 0: 31.7 GiB");
  assert.equal(deviceMemory("{}"), "not recorded");
  assert.equal(deviceMemory("garbage"), "not recorded");
});

test("bar labels cut to a shared prefix jump to where the names differ", () => {
  const names = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >",
    "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, at::detail::Array<char*, 3> >",
    "volta_sgemm_128x32_nt",
  ];
  const labels = distinctLabels(names);
  assert.equal(labels[2], "volta_sgemm_128x32_nt");
  assert.notEqual(labels[0].slice(0, 34), labels[1].slice(0, 34));
  assert.ok(labels[0].startsWith("void at::nativ") && labels[0].includes("…") && labels[0].slice(0, 34).includes("Add"));
  assert.ok(labels[1].slice(0, 34).includes("Mul"));
  assert.deepEqual(distinctLabels(["a_long_name_that_differs_early_one_two_three", "b_long_name"]),
    ["a_long_name_that_differs_early_one_two_three", "b_long_name"]);
});

test("a label keeps where it parts from its nearer relatives too", () => {
  const names = ["void at::native::vectorized_elementwise_kernel<4, at::native::addcdiv_cuda_kernel(x)>",
    "void at::native::vectorized_elementwise_kernel<4, at::native::addcmul_cuda_kernel(x)>",
    "void at::native::unrolled_elementwise_kernel<at::native::addcdiv_cuda_kernel(x)>",
    "void at::native::unrolled_elementwise_kernel<at::native::addcmul_cuda_kernel(x)>"];
  const shown = distinctLabels(names).map((l) => l.slice(0, 34));
  assert.equal(new Set(shown).size, 4, shown.join(" | "));
});

test("a slice's label ends where the next slice of its lane starts over it, else at its own end", () => {
  // slices 0 [0, 10) and 1 [5, 15) overlap on lane 0; 2 [20, 25) after them; 3 on lane 1 over all of them
  const ts = [0, 5, 20, 0];
  const dur = [10, 10, 5, 30];
  const lane = [0, 0, 0, 1];
  assert.deepEqual([...labelEnds([2, 0, 3, 1], ts, dur, lane)].sort((a, b) => a[0] - b[0]), [[0, 5], [1, 15], [2, 25], [3, 30]]);
});
