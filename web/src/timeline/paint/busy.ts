// Painter of a device's busy row: per pixel, the share of time any of its streams runs something.
import type { BusyOf } from "../../lib/tracks";
import type { WindowData } from "../../lib/api";
import type { Viewport } from "../../lib/viewport";
import { busyShare, drawStrip } from "../groupstrip";

export function drawBusyRow(ctx: CanvasRenderingContext2D, vp: Viewport, data: WindowData, busy: BusyOf, y: number, height: number): void {
  const pxNs = (vp.end - vp.start) / vp.width;
  drawStrip(ctx, busyShare(data, new Set(busy.tracks), vp.start, pxNs, Math.ceil(vp.width)), y, height);
}
