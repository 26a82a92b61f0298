// The command palette's filter and its opening keys.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Action } from "../src/widgets/palette";
import { filterActions, isPaletteKey } from "../src/widgets/palette";

const act = (title: string): Action => ({ title, run: () => undefined });
const all = [act("Go to page: memory"), act("Hide Python frames"), act("Go to track: rank 0 · stream 7"), act("Go to track: rank 1 · stream 7")];

test("every word must be in the title, in any case; titles starting with the text come first", () => {
  assert.deepEqual(filterActions(all, "stream RANK 1").map((a) => a.title), ["Go to track: rank 1 · stream 7"]);
  assert.deepEqual(filterActions(all, "").length, 4);
  assert.deepEqual(filterActions(all, "nothing like it"), []);
  const ordered = filterActions([act("Show Python frames"), act("Python frames off")], "python");
  assert.deepEqual(ordered.map((a) => a.title), ["Python frames off", "Show Python frames"]);
});

test("a number matches a whole number only: rank 5 stream 84 is not rank 0's stream 84", () => {
  const tracks = [act("Go to track: rank 0 · pid 105 · stream 84"), act("Go to track: rank 5 · pid 110 · stream 84")];
  assert.deepEqual(filterActions(tracks, "rank 5 stream 84").map((a) => a.title), ["Go to track: rank 5 · pid 110 · stream 84"]);
  assert.deepEqual(filterActions(tracks, "strea 8").length, 0);
  assert.deepEqual(filterActions(tracks, "strea 84").length, 2);
  assert.deepEqual(filterActions([act("Go to track: rank 0 · thread 4000 (python3)")], "rank 3"), []);
});

test("Ctrl+K and Ctrl+Shift+P open it; K alone, Ctrl+Shift+K and Ctrl+P do not", () => {
  const key = (k: string, mods: Partial<KeyboardEvent> = {}) => ({ key: k, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods }) as KeyboardEvent;
  assert.equal(isPaletteKey(key("k", { ctrlKey: true })), true);
  assert.equal(isPaletteKey(key("P", { ctrlKey: true, shiftKey: true })), true);
  assert.equal(isPaletteKey(key("k", { metaKey: true })), true);
  assert.equal(isPaletteKey(key("k")), false);
  assert.equal(isPaletteKey(key("K", { ctrlKey: true, shiftKey: true })), false);
  assert.equal(isPaletteKey(key("p", { ctrlKey: true })), false);
});
