// Painter of the marks (dashed lines, their names and the time between neighbours on the axis)
// and of the area selection.
import { formatDuration } from "../../lib/format";
import type { Mark } from "../../lib/marks";
import { sortMarks } from "../../lib/marks";
import type { Viewport } from "../../lib/viewport";
import { toPx } from "../../lib/viewport";
import { AXIS_H } from "../layout";

const MARK_COLOR = "#be185d";

export function drawMarks(ctx: CanvasRenderingContext2D, vp: Viewport, marks: Mark[], height: number): void {
  ctx.fillStyle = MARK_COLOR;
  for (const m of marks) {
    const x = Math.round(toPx(vp, m.ts));
    if (x < 0 || x > vp.width) continue;
    for (let y = 0; y < height; y += 8) ctx.fillRect(x, y, 1, 5);
  }
}

/** Each mark's name on the axis, and between two neighbours in view the time from one to the next. */
export function drawMarkLabels(ctx: CanvasRenderingContext2D, vp: Viewport, marks: Mark[]): void {
  const sorted = sortMarks(marks);
  ctx.font = "bold 10px system-ui, sans-serif";
  for (let i = 0; i < sorted.length; i++) {
    const x = toPx(vp, sorted[i].ts);
    if (x < -200 || x > vp.width + 200) continue;
    ctx.fillStyle = MARK_COLOR;
    ctx.fillRect(Math.round(x), 0, 1, AXIS_H);
    ctx.fillText(sorted[i].name, x + 3, AXIS_H - 11);
    const next = sorted[i + 1];
    if (!next) continue;
    const x1 = toPx(vp, next.ts);
    const label = `Δ ${formatDuration(next.ts - sorted[i].ts)}`;
    const width = ctx.measureText(label).width;
    if (x1 - x > width + 40) ctx.fillText(label, (x + x1) / 2 - width / 2, AXIS_H - 11);
  }
  ctx.font = "11px system-ui, sans-serif";
}

/** The area selection: a tint over the range, stronger on its tracks (`rows`: their canvas tops and heights). */
export function drawRange(ctx: CanvasRenderingContext2D, vp: Viewport, range: { start: number; end: number } | null,
  rows: { y: number; height: number }[], height: number): void {
  if (!range) return;
  const x0 = toPx(vp, range.start);
  const x1 = toPx(vp, range.end);
  ctx.fillStyle = "rgba(60, 110, 220, 0.06)";
  ctx.fillRect(x0, 0, x1 - x0, height);
  ctx.fillStyle = "rgba(60, 110, 220, 0.22)";
  for (const r of rows) ctx.fillRect(x0, r.y, x1 - x0, r.height);
  ctx.fillStyle = "rgba(60, 110, 220, 0.8)";
  ctx.fillRect(x0, 0, 1, height);
  ctx.fillRect(x1, 0, 1, height);
}
