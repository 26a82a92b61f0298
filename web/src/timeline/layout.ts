// The timeline's vertical layout: which group or track sits at which height, and the pinned rows
// that stay at the top of the view while the rest scrolls.
import type { Group, Row } from "../lib/tracks";
import { PINNED_KEY } from "./trackcontrol";

export const LABEL_FOLDED_W = 30;
export const SLICE_H = 18;
export const ROW_PAD = 3;
export const GROUP_H = 26;
export const COUNTER_H = 42;
export const AXIS_H = 28;
export const BUSY_H = 22;
export const INSTANT_R = 5;

export interface LayoutRow { y: number; height: number; kind: "group" | Row["kind"]; group: Group; row?: Row; }

function rowHeight(row: Row): number {
  if (row.kind === "counter") return COUNTER_H;
  if (row.kind === "busy") return BUSY_H;
  return row.lanes * SLICE_H + 2 * ROW_PAD;
}

/** The rows of `groups` from the top, the folded groups as their header alone; and the total height. */
export function buildLayout(groups: Group[], collapsed: Set<string>): { rows: LayoutRow[]; height: number } {
  const rows: LayoutRow[] = [];
  let y = 0;
  for (const group of groups) {
    rows.push({ y, height: GROUP_H, kind: "group", group });
    y += GROUP_H;
    if (collapsed.has(group.key)) continue;
    for (const row of group.rows) {
      const height = rowHeight(row);
      rows.push({ y, height, kind: row.kind, group, row });
      y += height;
    }
  }
  return { rows, height: y };
}

export function isPinned(item: LayoutRow): boolean {
  return item.group.key === PINNED_KEY;
}

/** Height of the pinned group (the first one): it stays at the top of the view while the rest scrolls. */
export function pinnedHeight(layout: LayoutRow[]): number {
  let h = 0;
  for (const l of layout) {
    if (!isPinned(l)) break;
    h = l.y + l.height;
  }
  return h;
}

/** Where a layout row is drawn on the canvas, the rows scrolled by `scrollTop`. */
export function screenY(item: LayoutRow, scrollTop: number): number {
  return isPinned(item) ? item.y : item.y - scrollTop;
}

/** The layout position under canvas height `y` (in the pinned rows, or in the scrolled ones). */
export function layoutY(layout: LayoutRow[], y: number, scrollTop: number): number {
  return y < pinnedHeight(layout) ? y : y + scrollTop;
}

/** The row under canvas height `y`. */
export function rowAt(layout: LayoutRow[], y: number, scrollTop: number): LayoutRow | undefined {
  const pinned = y < pinnedHeight(layout);
  const abs = layoutY(layout, y, scrollTop);
  return layout.find((l) => isPinned(l) === pinned && abs >= l.y && abs < l.y + l.height);
}

/** The rows within `margin` px of the view (`top`, `height`), the pinned ones always. */
export function visibleRows(layout: LayoutRow[], scrollTop: number, viewHeight: number, margin: number): LayoutRow[] {
  const top = scrollTop - margin;
  const bottom = scrollTop + viewHeight + margin;
  return layout.filter((l) => isPinned(l) || (l.y + l.height >= top && l.y <= bottom));
}

export function rowOfTrack(layout: LayoutRow[], track: number): LayoutRow | undefined {
  return layout.find((l) => l.kind === "slice" && l.row!.id === track);
}
