// The loading page's text and bar from /api/progress answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Progress } from "../src/widgets/loading";
import { previewText, stageFraction, stageText } from "../src/widgets/loading";

const at = (stage: string, done: number, total: number): Progress =>
  ({ stage, done, total, message: "", error: null, ready: false, elapsed_s: 0 });

test("each stage is named with its step and its count when known", () => {
  assert.equal(stageText(at("import", 0, 0)), "Step 1 of 3: importing the traces");
  assert.equal(stageText(at("ingest", 3, 8)), "Step 2 of 3: ingesting the sessions (3 of 8)");
  assert.equal(stageText(at("index", 0, 0)), "Step 3 of 3: building the viewer index");
  assert.equal(stageText(at("error", 0, 0)), "error");
});

test("the bar is indeterminate while the amount of work is unknown", () => {
  assert.equal(stageFraction(at("index", 0, 0)), null);
  assert.equal(stageFraction(at("ingest", 2, 8)), 0.25);
  assert.equal(stageFraction(at("ingest", 9, 8)), 1);
});

test("the index stage counts in per cent", () => {
  assert.equal(stageText({ ...at("index", 43, 100), unit: "%" }), "Step 3 of 3: building the viewer index (43 %)");
  assert.equal(stageFraction({ ...at("index", 43, 100), unit: "%" }), 0.43);
});

test("the preview banner names what it holds and what it lacks", () => {
  const text = previewText({ trace: "rank0.pt.trace.json", trace_bytes: 1_000_000_000, ranks: [0], events: 41_000, span_ns: 1_234_000_000 });
  assert.equal(text, "Preview: the first 41,000 events of rank0.pt.trace.json (954 MiB, rank 0), over 1.23 s. " +
    "A trace is not written in time order: tracks written later in the file are missing here.");
});
