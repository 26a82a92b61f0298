// Where an analysis row leads on the timeline: its example event (`example_id`), else the first point
// in time it names (a `*_ts_ns` column, an offset from the run start as the summary API gives it).

import type { EventId } from "./ids";
import { isEventId } from "./ids";

export type RowTarget = { id: EventId } | { ts: number };

/** Half the window opened around a point in time: wide enough to see what surrounds it. */
export const AROUND_NS = 50_000;

export function analysisTarget(columns: string[], row: Record<string, unknown>): RowTarget | null {
  const id = row.example_id;
  const text = typeof id === "number" || typeof id === "string" ? String(id) : "";
  if (columns.includes("example_id") && isEventId(text)) return { id: text };
  const tsColumn = columns.find((c) => c.endsWith("_ts_ns") && typeof row[c] === "number" && (row[c] as number) >= 0);
  return tsColumn ? { ts: row[tsColumn] as number } : null;
}

/** The deep link of a target: the timeline with the event selected, or a window centred on the time. */
export function targetLink(target: RowTarget): string {
  if ("id" in target) return `?page=timeline&sel=${target.id}`;
  const start = Math.max(Math.round(target.ts - AROUND_NS), 0);
  return `?page=timeline&start=${start}&end=${Math.round(target.ts + AROUND_NS)}`;
}
