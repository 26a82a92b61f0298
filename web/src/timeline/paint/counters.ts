// Painter of counter tracks: one counter's series as a step chart (counters.ts draws it).
import type { CounterData, CounterTrack } from "../../lib/api";
import { canvasColors } from "../../lib/theme";
import type { Viewport } from "../../lib/viewport";
import { toPx } from "../../lib/viewport";
import { drawCounter } from "../counters";

export function drawCounterRow(ctx: CanvasRenderingContext2D, vp: Viewport, c: CounterTrack, counters: CounterData | null,
  y: number, height: number): void {
  drawCounter(ctx, c, counters?.series[String(c.id)], { y, height, width: vp.width, toPx: (ns) => toPx(vp, ns) },
    canvasColors().axisText);
}
