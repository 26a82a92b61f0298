// The summary strip of a folded group: in its header row, per pixel, the share of that pixel's
// time in which any of the group's tracks is busy, drawn as a bar from the row's bottom. Computed
// from the window the timeline already fetches (`/api/window`) for the group's tracks.
import type { WindowData } from "../lib/api";

/** Per pixel (`width` of them, from `startNs`, `pxNs` each), the share of the pixel's time covered by
 *  at least one slice of `tracks` (exact: overlapping slices, nested or on other tracks, count once).
 *  Where short events were merged into blocks the share is at least the busiest single block's
 *  (overlaps between blocks of different tracks are unknown), so the strip never overstates. */
export function busyShare(d: WindowData, tracks: Set<number>, startNs: number, pxNs: number, width: number): Float64Array {
  const covered = new Float64Array(width);
  const spans: [number, number][] = [];
  d.slices.track.forEach((t, i) => {
    if (tracks.has(t) && d.slices.dur[i] > 0) spans.push([d.slices.ts[i], d.slices.ts[i] + d.slices.dur[i]]);
  });
  spans.sort((a, b) => a[0] - b[0]);
  let [s0, s1] = [NaN, NaN];
  const add = (a: number, b: number) => addSpan(covered, a, b, startNs, pxNs);
  for (const [a, b] of spans) {
    if (a > s1 || Number.isNaN(s1)) {
      if (!Number.isNaN(s1)) add(s0, s1);
      [s0, s1] = [a, b];
    } else s1 = Math.max(s1, b);
  }
  if (!Number.isNaN(s1)) add(s0, s1);
  const share = covered.map((ns) => Math.min(1, ns / pxNs));
  d.blocks.track.forEach((t, i) => {
    if (!tracks.has(t)) return;
    const span = Math.max(d.blocks.end[i] - d.blocks.ts[i], 1);
    const density = Math.min(1, d.blocks.busy[i] / span);
    const p0 = Math.max(0, Math.floor((d.blocks.ts[i] - startNs) / pxNs));
    const p1 = Math.min(width - 1, Math.floor((d.blocks.end[i] - 1 - startNs) / pxNs));
    for (let p = p0; p <= p1; p++) share[p] = Math.max(share[p], density);
  });
  return share;
}

/** Adds the nanoseconds of [a, b) to each pixel it overlaps. */
function addSpan(covered: Float64Array, a: number, b: number, startNs: number, pxNs: number): void {
  const p0 = Math.max(0, Math.floor((a - startNs) / pxNs));
  const p1 = Math.min(covered.length - 1, Math.floor((b - startNs) / pxNs));
  for (let p = p0; p <= p1; p++) {
    const lo = Math.max(a, startNs + p * pxNs);
    const hi = Math.min(b, startNs + (p + 1) * pxNs);
    if (hi > lo) covered[p] += hi - lo;
  }
}

export const STRIP_COLOR = "rgb(37, 99, 235)";

/** The strip over a header row at `y`, `height` high: a bar per pixel as tall as its share. */
export function drawStrip(ctx: CanvasRenderingContext2D, share: Float64Array, y: number, height: number): void {
  ctx.fillStyle = STRIP_COLOR;
  const top = height - 4;
  for (let x = 0; x < share.length; x++) {
    if (share[x] <= 0) continue;
    const bar = Math.max(1, share[x] * top);
    ctx.fillRect(x, y + height - 2 - bar, 1, bar);
  }
}
