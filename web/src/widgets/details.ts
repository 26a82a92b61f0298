// The Details tab's fields and args: what a user reads first (name, kind, times, place) before the
// dataset's internal keys, args one line per key, and the fields that name another event as links.

import type { EventId } from "../lib/ids";
import { isEventId } from "../lib/ids";

/** Fields shown first, in this order: what the event is, when, where, and how it joins others. */
const FIRST = ["name", "kind", "layer", "category", "ts_ns", "dur_ns", "self_ns", "step", "pid", "tid", "device", "stream",
  "collective", "correlation", "external_id", "parent_id", "op_id", "launch_id"];
/** Keys of the dataset's own bookkeeping, shown last. */
const INTERNAL = ["id", "run", "rank", "session", "track_id", "lane", "depth", "stack_id"];
/** Fields whose value is another event's id (-1: none): shown as links that select it. */
export const EVENT_ID_FIELDS = new Set(["parent_id", "op_id", "launch_id"]);

/** `fields` as [key, text] rows: FIRST's in its order, then any other field, then INTERNAL's. */
export function orderedFields(fields: Record<string, unknown>): [string, string][] {
  const rank = (k: string) => (FIRST.includes(k) ? FIRST.indexOf(k) : INTERNAL.includes(k) ? 1000 + INTERNAL.indexOf(k) : 500);
  return Object.keys(fields).map((k, i) => ({ k, i })).sort((a, b) => rank(a.k) - rank(b.k) || a.i - b.i)
    .map(({ k }) => [k, valueText(fields[k])]);
}

/** An args object as [key, text] rows: lists and objects as one line of JSON (`[[128, 64], [64]]`). */
export function argRows(args: unknown): [string, string][] {
  if (!args || typeof args !== "object" || Array.isArray(args)) return args === undefined || args === null ? [] : [["args", valueText(args)]];
  return Object.entries(args as Record<string, unknown>).map(([k, v]) => [k, valueText(v)]);
}

function valueText(v: unknown): string {
  return v !== null && typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** The event id a field links to, or null (not a link field, or -1). */
export function linkedId(key: string, text: string): EventId | null {
  return EVENT_ID_FIELDS.has(key) && isEventId(text) ? text : null;
}
