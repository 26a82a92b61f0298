// The Details tab's field order, args rows and event links.
import assert from "node:assert/strict";
import { test } from "node:test";
import { argRows, linkedId, orderedFields } from "../src/widgets/details";

test("what the event is and when come first, the dataset's bookkeeping last, other fields between", () => {
  const fields = { run: "r", rank: 0, id: 7, session: "s", layer: "framework", kind: "op", name: "aten::mm", category: "cpu_op",
    ts_ns: 5, dur_ns: 3, future_column: 1, parent_id: 4, stack_id: -1 };
  assert.deepEqual(orderedFields(fields).map(([k]) => k),
    ["name", "kind", "layer", "category", "ts_ns", "dur_ns", "parent_id", "future_column", "id", "run", "rank", "session", "stack_id"]);
});

test("args are one row per key, lists on one line", () => {
  assert.deepEqual(argRows({ "Input Dims": [[128, 64], [64]], "Sequence number": 3, "Ev Idx": "x" }),
    [["Input Dims", "[[128,64],[64]]"], ["Sequence number", "3"], ["Ev Idx", "x"]]);
  assert.deepEqual(argRows({}), []);
  assert.deepEqual(argRows(null), []);
  assert.deepEqual(argRows([1, 2]), [["args", "[1,2]"]]);
});

test("parent_id, op_id and launch_id link to their event unless -1", () => {
  assert.equal(linkedId("parent_id", "1099511627776"), "1099511627776");
  assert.equal(linkedId("op_id", "9007199254740993"), "9007199254740993"); // past 2^53, exact
  assert.equal(linkedId("op_id", "-1"), null);
  assert.equal(linkedId("stack_id", "12"), null);
});
