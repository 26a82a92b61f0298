// Unit tests of compare mode's pure helpers: step alignment, exact-name queries, a row's names.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { DeltaRow, Verdict, Waterfall } from "../src/pages/comparepage";
import { UNCHANGED, aligned, bothInView, commonSteps, comparabilityText, deltaTint, exactName, movedParts, rowNames, stepVerdict, verdictText } from "../src/pages/comparepage";

test("common steps keep BASE's order and drop steps one side lacks", () => {
  const span = (step: number) => ({ step, start_ns: step * 10, end_ns: step * 10 + 5 });
  assert.deepEqual(commonSteps([span(3), span(4), span(5)], [span(5), span(4), span(9)]), [4, 5]);
  assert.deepEqual(commonSteps([span(1)], []), []);
});

test("a window keeps its offsets from the step start on the other side", () => {
  assert.deepEqual(aligned(1_050, 1_250, 1_000, 70_000), [70_050, 70_250]);
  assert.deepEqual(aligned(900, 1_100, 1_000, 0), [-100, 100]);  // starting before the step
});

test("an exact-name query escapes the regex specials of kernel names", () => {
  const kernel = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous)::f>(int, float*) [x]/y.z";
  const query = exactName(kernel);
  assert.ok(query.startsWith("name:/^") && query.endsWith("$/"));
  const pattern = new RegExp(query.slice("name:/".length, -1));
  assert.ok(pattern.test(kernel));
  assert.ok(!pattern.test(kernel + " "));
  assert.ok(!pattern.test("aten::mm2") && new RegExp(exactName("aten::mm").slice(6, -1)).test("aten::mm"));
  assert.ok(!query.slice(6, -1).replace(/\\\//g, "").includes("/"));  // no bare slash ends the regex early
});

test("a replaced row stands for BASE's name and NEW's", () => {
  const row = (fields: Record<string, unknown>) => ({ match: "matched", delta_per_step_ns: 0, significant: null, ...fields }) as DeltaRow;
  assert.deepEqual(rowNames(row({ name: "aten::mm" })), ["aten::mm", "aten::mm"]);
  assert.deepEqual(rowNames(row({ name: "sm80_gemm", new_name: "sm90_gemm", match: "replaced" })), ["sm80_gemm", "sm90_gemm"]);
  assert.deepEqual(rowNames(row({ module: "nn.Module: Block_1" })), ["nn.Module: Block_1", "nn.Module: Block_1"]);
});

test("the step verdict says the medians, the change and whether it is noise", () => {
  const step = { base: { median_ns: 10e6 }, new: { median_ns: 12e6 }, delta_pct: 20, significant: false };
  assert.match(stepVerdict(step), /^median step 10(\.0+)? ms → 12(\.0+)? ms \(\+20\.00%\), within the step-to-step variation$/);
  assert.match(stepVerdict({ ...step, significant: true }), /, significant$/);
  assert.match(stepVerdict({ ...step, significant: null }), /, inconclusive \(too few steps to tell\)$/);
  assert.equal(stepVerdict(undefined), "no ProfilerStep on a side: step times not compared");
  assert.equal(stepVerdict({ ...step, new: { median_ns: null } }), "no ProfilerStep on a side: step times not compared");
});

test("the verdict says its change, confidence and steps; inconclusive says what is missing", () => {
  const v: Verdict = { verdict: "regression", change_pct: 12.3, confidence: 0.999, threshold_pct: 2, base_steps: 10, new_steps: 9, missing: [], reason: "r" };
  assert.equal(verdictText(v), "REGRESSION: step time +12.30% (confidence 99.90%, 10 vs 9 steps, threshold 2%)");
  assert.equal(verdictText({ ...v, verdict: "improvement", change_pct: -5 }), "IMPROVEMENT: step time -5.00% (confidence 99.90%, 10 vs 9 steps, threshold 2%)");
  assert.equal(verdictText({ ...v, verdict: "inconclusive", missing: ["BASE has no ProfilerStep"] }), "INCONCLUSIVE: BASE has no ProfilerStep");
});

test("comparability names what breaks the comparison, then what only differs", () => {
  const check = (name: string, differs: boolean, breaks: boolean) => ({ check: name, base: 1, new: 2, differs, breaks, why: `${name} why` });
  assert.equal(comparabilityText({ comparable: true, checks: [check("a", false, false)] }), "comparable");
  assert.equal(comparabilityText({ comparable: true, checks: [check("steps", true, false)] }), "comparable (differs: steps why)");
  assert.equal(comparabilityText({ comparable: false, checks: [check("world_size", true, true), check("steps", true, false)] }),
    "NOT comparable: world_size why (differs: steps why)");
});

test("the waterfall's parts that moved are listed and all parts sum to the change", () => {
  const part = (name: string, delta: number) => ({ part: name, base_ns: 100, new_ns: 100 + delta, delta_ns: delta, share_pct: null, behind: [] });
  const w: Waterfall = { total_delta_ns: 7, base_mean_ns: 800, new_mean_ns: 807, parts: [part("device_compute", 10), part("host_only", -3), part("memory", 0)] };
  const { parts, sum_ns } = movedParts(w);
  assert.deepEqual(parts.map((p) => p.part), ["device_compute", "host_only"]);
  assert.equal(sum_ns, 7);
});

test("ops and kernels are tinted red when slower, blue when faster, deeper for more; the rest grey", () => {
  const row = (name: string, delta: number, extra: Record<string, unknown> = {}) => ({ name, match: "matched", delta_per_step_ns: delta, significant: true, ...extra }) as DeltaRow;
  const tint = deltaTint([row("aten::mm", 1000), row("aten::add", 100), row("k1", -500, { new_name: "k2", match: "replaced" }), row("same", 0),
    row("noise", 5000, { significant: false }), row("few steps", 10, { significant: null })]);
  const [mm, add, k1, k2] = ["aten::mm", "aten::add", "k1", "k2"].map((n) => tint.colours.get(n)!);
  assert.ok(mm[0] > mm[2] && add[0] > add[2], "slower: red");
  assert.ok(k1[2] > k1[0] && k2 === k1, "faster: blue, on both names of a replaced row");
  assert.ok(mm[1] < add[1], "the larger change deeper");
  assert.equal(tint.colours.has("same"), false);
  assert.equal(tint.colours.has("noise"), false, "within the noise: grey, and not the scale's largest");
  assert.ok(tint.colours.has("few steps"), "significance unknown: coloured");
  assert.deepEqual(tint.other, UNCHANGED);
  assert.equal(deltaTint([]).colours.size, 0);
});

test("a jump shows both events at their offsets from their own step start", () => {
  const brief = (ts: number, dur: number) => ({ id: "1", track: 0, lane: 0, ts, dur, name: "k", layer: "device" });
  // BASE's event 100..200 into its step (at 1000), NEW's 300..350 into its own (at 50000)
  const [start, end] = bothInView(brief(1100, 100), 1000, brief(50_300, 50), 50_000)!;
  assert.ok(start <= 1100 && end >= 1350, "both offsets in BASE's view");
  assert.deepEqual(bothInView(null, 0, null, 0), null);
});
