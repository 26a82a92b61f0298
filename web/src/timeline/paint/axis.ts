// Painter of the time axis: ticks, their labels, the marks' names and the area selection's span.
import { axisTicks } from "../../lib/format";
import type { Mark } from "../../lib/marks";
import { canvasColors } from "../../lib/theme";
import type { Viewport } from "../../lib/viewport";
import { toPx } from "../../lib/viewport";
import { AXIS_H } from "../layout";
import { drawMarkLabels } from "./marks";

export function drawAxis(axis: HTMLCanvasElement, vp: Viewport, marks: Mark[], range: { start: number; end: number } | null): void {
  const ctx = axis.getContext("2d")!;
  const dpr = window.devicePixelRatio || 1;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, vp.width, AXIS_H);
  const colors = canvasColors();
  ctx.fillStyle = colors.axisBg;
  ctx.fillRect(0, 0, vp.width, AXIS_H);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "top";
  const { ticks } = axisTicks(vp.start, vp.end, Math.max(2, Math.floor(vp.width / 110)));
  axis.setAttribute("aria-label", `time from run start: ${ticks.map((t) => t.label).join(", ")}`);
  for (const t of ticks) {
    const x = Math.round(toPx(vp, t.ns)) + 0.5;
    ctx.fillStyle = colors.tick;
    ctx.fillRect(x, AXIS_H - 8, 1, 8);
    ctx.fillStyle = colors.axisText;
    const fits = x + 3 + ctx.measureText(t.label).width <= vp.width;
    ctx.textAlign = fits ? "left" : "right"; // the last label ends at its tick instead of being cut
    ctx.fillText(t.label, fits ? x + 3 : x - 3, 4);
  }
  ctx.textAlign = "left";
  drawMarkLabels(ctx, vp, marks);
  if (range) {
    ctx.fillStyle = "rgba(60, 110, 220, 0.25)";
    const x0 = toPx(vp, range.start);
    ctx.fillRect(x0, 0, toPx(vp, range.end) - x0, AXIS_H);
  }
}
