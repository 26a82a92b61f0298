// The drawer's tables: which rows a virtualized table draws, its sort, and the pivot of a query result.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pivotRows } from "../src/lib/pivot";
import { columnWidths, ROW_PX, sortOrder, visibleRange, widthSample } from "../src/widgets/vtable";

test("a virtualized table draws the rows in view and a few around, never past the end", () => {
  assert.deepEqual(visibleRange(0, 10 * ROW_PX, 100_000), [0, 14]);
  const [first, last] = visibleRange(50_000 * ROW_PX, 10 * ROW_PX, 100_000);
  assert.ok(first < 50_000 && last > 50_010 && last - first <= 20); // a scroll frame lays out about a screenful
  assert.deepEqual(visibleRange(0, 10 * ROW_PX, 3), [0, 3]);
  assert.deepEqual(visibleRange(0, 0, 0), [0, 0]);
});

test("a sort orders numbers as numbers, NULL first, and keeps ties in order", () => {
  const rows = [["b", 10], ["a", 9], ["c", null], ["d", 10], ["e", "100"]];
  assert.deepEqual(sortOrder(rows, 1, 1), [2, 1, 0, 3, 4]);
  assert.deepEqual(sortOrder(rows, 1, -1), [4, 0, 3, 1, 2]);
  assert.deepEqual(sortOrder(rows, 0, 1), [1, 0, 2, 3, 4]);
});

test("a query result pivots on any column, with dur_ns and self_ns summed", () => {
  const columns = ["name", "rank", "dur_ns", "self_ns"];
  const rows = [["mm", 0, 10, 4], ["mm", 1, 30, 30], ["relu", 0, 5, 5], [null, 0, 1, 1]];
  assert.deepEqual(pivotRows(columns, rows, "name"), [
    { key: "mm", count: 2, self_ns: 34, total_ns: 40, mean_ns: 20, max_ns: 30 },
    { key: "relu", count: 1, self_ns: 5, total_ns: 5, mean_ns: 5, max_ns: 5 },
    { key: "NULL", count: 1, self_ns: 1, total_ns: 1, mean_ns: 1, max_ns: 1 },
  ]);
  assert.deepEqual(pivotRows(columns, rows, "rank").map((g) => [g.key, g.count, g.total_ns]), [["1", 1, 30], ["0", 3, 16]]);
  assert.deepEqual(pivotRows(["name"], [["a"], ["a"], ["b"]], "name").map((g) => [g.key, g.count, g.total_ns]), [["a", 2, 0], ["b", 1, 0]]);
  assert.deepEqual(pivotRows(columns, rows, "nope"), []);
});

test("a column is as wide as its longest text among the header and the first rows, within bounds", () => {
  const widths = columnWidths(["id", "name"], [[1, "aten::mm"], [22, "x".repeat(500)]], (v) => String(v));
  assert.equal(widths[0], 48); // "id" and two characters of room for the sort arrow: the minimum
  assert.equal(widths[1], 560);
});

test("a long value far down a result widens its column: the widest numbers and an even spread are measured", () => {
  const rows: [number, string][] = Array.from({ length: 100_000 }, (_, i) => [i % 100, "aten::mm"]);
  rows[70_000][0] = 123_456_789_012; // one long number, after the first rows
  rows[50_000][1] = "aten::_scaled_dot_product_flash_attention"; // on the even spread (every 500th row)
  const widths = columnWidths(["dur_ns", "name"], widthSample(rows), (v) => String(v));
  assert.equal(widths[0], 12 * 7 + 18); // the twelve digits, not the first rows' two
  assert.equal(widths[1], "aten::_scaled_dot_product_flash_attention".length * 7 + 18);
  assert.ok(widthSample(rows).length <= 404); // a few hundred rows, whatever the result's size
});

test("remembered slice and label colours are the ones computed afresh", async () => {
  const { colorFor, fillRgb, labelColorFor, textOn } = await import("../src/lib/color");
  for (const name of ["aten::mm", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", ""]) {
    assert.equal(colorFor(name), colorFor(name));
    assert.equal(labelColorFor(name), textOn(fillRgb(name)));
  }
  assert.match(colorFor("x", 0.5), /, 0\.5\)$/);
});
