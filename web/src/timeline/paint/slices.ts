// Painter of slice tracks: the slices of a window, the merged blocks where many events share a pixel,
// instants as diamonds, and the names that fit.
import type { EventId, WindowData } from "../../lib/api";
import { colorFor, fillRgb, labelColorFor, textOn } from "../../lib/color";
import { formatCount } from "../../lib/format";
import { labelEnds } from "../../lib/labels";
import { canvasColors } from "../../lib/theme";
import type { Viewport } from "../../lib/viewport";
import { toPx } from "../../lib/viewport";
import { INSTANT_R, ROW_PAD, SLICE_H } from "../layout";

export const MATCH_COLOR = "#ffb000";
const LINK_COLOR = "#7c3aed"; // the selected collective's instance on the other ranks

/** A track's slices and blocks: indexes into the window's columns. */
export interface TrackIndex { slices: number[]; blocks: number[]; }

/** What the slice painter reads: the view, the window and the highlighted events. */
export interface SliceScene {
  vp: Viewport;
  data: WindowData;
  selected: EventId | undefined;
  matches: Set<EventId>;
  linked: Set<EventId>;
}

/** The window's slices and blocks by track. */
export function indexByTrack(data: WindowData): Map<number, TrackIndex> {
  const byTrack = new Map<number, TrackIndex>();
  const slot = (t: number) => byTrack.get(t) ?? (byTrack.set(t, { slices: [], blocks: [] }).get(t)!);
  data.slices.track.forEach((t, i) => slot(t).slices.push(i));
  data.blocks.track.forEach((t, i) => slot(t).blocks.push(i));
  return byTrack;
}

/** Draws one track's blocks then slices, lanes below `lanes` only, the track's top at `y`. */
export function drawSlices(ctx: CanvasRenderingContext2D, s: SliceScene, mine: TrackIndex, lanes: number, y: number): void {
  drawBlocks(ctx, s, mine, lanes, y);
  const { vp, data: d } = s;
  const px = (vp.end - vp.start) / vp.width;
  const labelEnd = labelEnds(mine.slices, d.slices.ts, d.slices.dur, d.slices.lane);
  const thin = new Map<number, number>(); // per lane, the pixel column a slice under 1 px (or an instant) last filled
  for (const i of mine.slices) {
    const x0 = toPx(vp, d.slices.ts[i]);
    const w = Math.max(d.slices.dur[i] / px, 1);
    const lane = d.slices.lane[i];
    if (x0 + w < -INSTANT_R || x0 - INSTANT_R > vp.width || lane >= lanes) continue;
    const top = y + ROW_PAD + lane * SLICE_H;
    const selected = s.selected === d.slices.id[i];
    const matched = s.matches.has(d.slices.id[i]);
    const linked = s.linked.has(d.slices.id[i]);
    if (w <= 1 && !selected && !matched && !linked) { // per-pixel aggregation: one thin mark per pixel and lane
      const column = Math.floor(x0);
      if (thin.get(lane) === column) continue;
      thin.set(lane, column);
    }
    const name = d.strings[d.slices.name[i]];
    if (d.slices.dur[i] === 0) {
      drawInstant(ctx, x0, top, colorFor(name), selected, matched);
      continue;
    }
    ctx.fillStyle = colorFor(name);
    ctx.fillRect(x0, top, w, SLICE_H - 1);
    if (matched || linked) {
      ctx.strokeStyle = linked ? LINK_COLOR : MATCH_COLOR;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, top, Math.max(w, 2), SLICE_H - 1);
    }
    if (selected) {
      ctx.strokeStyle = canvasColors().outline;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 + 1, top + 1, Math.max(w - 2, 1), SLICE_H - 3);
    }
    const x1 = Math.min(x0 + w, toPx(vp, labelEnd.get(i)!), vp.width);
    if (x1 - Math.max(x0, 0) > 24) drawLabel(ctx, name, Math.max(x0, 0), x1, top, labelColorFor(name));
  }
}

function drawBlocks(ctx: CanvasRenderingContext2D, s: SliceScene, mine: TrackIndex, lanes: number, y: number): void {
  const { vp, data: d } = s;
  for (const i of mine.blocks) {
    const x0 = Math.max(toPx(vp, d.blocks.ts[i]), -10);
    const x1 = Math.min(toPx(vp, d.blocks.end[i]), vp.width + 10);
    if (x1 < 0 || x0 > vp.width) continue;
    if (d.blocks.lane[i] >= lanes) continue; // beyond the lane limit
    const density = Math.min(1, d.blocks.busy[i] / Math.max(d.blocks.end[i] - d.blocks.ts[i], 1));
    const top = y + ROW_PAD + d.blocks.lane[i] * SLICE_H;
    const alpha = 0.35 + 0.55 * density;
    ctx.fillStyle = colorFor(d.strings[d.blocks.name[i]], alpha);
    ctx.fillRect(x0, top, Math.max(x1 - x0, 1), SLICE_H - 1);
    if (x1 - x0 > 70) drawLabel(ctx, `${formatCount(d.blocks.count[i])} events`, x0, x1, top, textOn(fillRgb(d.strings[d.blocks.name[i]], alpha)));
  }
}

function drawLabel(ctx: CanvasRenderingContext2D, text: string, x0: number, x1: number, top: number, color: string): void {
  const room = x1 - x0 - 6;
  if (room < 12) return;
  const chars = Math.floor(room / 6);
  ctx.fillStyle = color;
  ctx.fillText(text.length > chars ? text.slice(0, Math.max(chars - 1, 1)) + "…" : text, x0 + 3, top + SLICE_H / 2, room);
}

function drawInstant(ctx: CanvasRenderingContext2D, x: number, top: number, fill: string, selected: boolean, matched: boolean): void {
  const cy = top + (SLICE_H - 1) / 2;
  const r = selected ? INSTANT_R + 2 : INSTANT_R;
  ctx.beginPath();
  ctx.moveTo(x, cy - r);
  ctx.lineTo(x + r, cy);
  ctx.lineTo(x, cy + r);
  ctx.lineTo(x - r, cy);
  ctx.closePath();
  ctx.fillStyle = fill;
  ctx.fill();
  ctx.lineWidth = selected || matched ? 2 : 1;
  ctx.strokeStyle = selected ? canvasColors().outline : matched ? MATCH_COLOR : "rgba(17, 24, 39, 0.7)";
  ctx.stroke();
}
