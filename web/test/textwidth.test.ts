// Labels cut by their measured width, each text measured once per font.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fitText, textWidths } from "../src/lib/textwidth";

/** A canvas context whose characters are 5 px wide ("W" 10 px), counting its measureText calls. */
function fakeContext(font: string): { ctx: CanvasRenderingContext2D; calls: string[] } {
  const calls: string[] = [];
  const width = (text: string) => [...text].reduce((sum, c) => sum + (c === "W" ? 10 : 5), 0);
  const ctx = { font, measureText: (text: string) => { calls.push(text); return { width: width(text) }; } };
  return { ctx: ctx as unknown as CanvasRenderingContext2D, calls };
}

test("a text that fits is whole; one that does not keeps what fits of its start and an ellipsis", () => {
  const { ctx } = fakeContext("11px test-a");
  const width = textWidths(ctx);
  assert.equal(fitText("aten::mm", 40, width), "aten::mm");
  assert.equal(fitText("aten::addmm", 40, width), "aten::a…"); // (40 - 5) px of 55 for 11 characters: 7 of them
  assert.equal(fitText("WWWWWWWW", 40, width), "WWW…");
  assert.equal(fitText("WWWWWWWW", 9, width), "");
});

test("each text is measured once per font, however often it is drawn", () => {
  const a = fakeContext("11px test-b");
  for (let i = 0; i < 3; i++) fitText("aten::linear", 20, textWidths(a.ctx));
  assert.deepEqual(a.calls, ["aten::linear", "…"]);
  const b = fakeContext("10px test-b");
  fitText("aten::linear", 200, textWidths(b.ctx));
  assert.deepEqual(b.calls, ["aten::linear"]);
});
