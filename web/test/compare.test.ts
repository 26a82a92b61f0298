// Unit tests of compare mode's pure helpers: step alignment, exact-name queries, a row's names.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { DeltaRow } from "../src/pages/comparepage";
import { aligned, commonSteps, exactName, rowNames, stepVerdict } from "../src/pages/comparepage";

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
