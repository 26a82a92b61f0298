// Painter of slice tracks: the slices of a window, the merged blocks where many events share a pixel,
// instants as diamonds, and the names that fit.
import type { EventId, WindowData } from "../../lib/api";
import type { Rgb } from "../../lib/color";
import { colorFor, fillRgb, textOn } from "../../lib/color";
import { formatCount } from "../../lib/format";
import { byLaneAndStart, labelEndsInOrder } from "../../lib/labels";
import { fitText, textWidths } from "../../lib/textwidth";
import { canvasColors } from "../../lib/theme";
import type { Viewport } from "../../lib/viewport";
import { toPx } from "../../lib/viewport";
import { INSTANT_R, ROW_PAD, SLICE_H } from "../layout";

export const MATCH_COLOR = "#ffb000";
const LINK_COLOR = "#7c3aed"; // the selected collective's instance on the other ranks

/** Fills by name instead of the name's hue (compare mode's colour by delta): `other` for names not listed. */
export interface Tint { colours: Map<string, Rgb>; other: Rgb; }

/** The fill of `name` (CSS) and its colour over white (for the label's contrast), tinted or by hue. */
export function fillOf(tint: Tint | null | undefined, name: string, alpha = 1): { css: string; rgb: Rgb } {
  if (!tint) return { css: colorFor(name, alpha), rgb: fillRgb(name, alpha) };
  const rgb = (tint.colours.get(name) ?? tint.other).map((c) => Math.round(c * alpha + 255 * (1 - alpha))) as Rgb;
  return { css: `rgb(${rgb[0]}, ${rgb[1]}, ${rgb[2]})`, rgb };
}

/** A track's slices (by lane, then start) and blocks: indexes into the window's columns; and where each
 *  slice of the window must end its label (ns, by slice index; `labelEnds`). */
export interface TrackIndex { slices: number[]; blocks: number[]; labelEnd: Float64Array; }

/** What the slice painter reads: the view, the window and the highlighted events. */
export interface SliceScene {
  vp: Viewport;
  data: WindowData;
  selected: EventId | undefined;
  matches: Set<EventId>;
  linked: Set<EventId>;
  tint?: Tint | null;
}

/** The window's slices and blocks by track, each track's slices by lane then start (so that the slices
 *  under a pixel wide of one lane and pixel column come one after the other). */
export function indexByTrack(data: WindowData): Map<number, TrackIndex> {
  const byTrack = new Map<number, TrackIndex>();
  const { ts, dur, lane } = data.slices;
  const labelEnd = new Float64Array(ts.length);
  const slot = (t: number) => byTrack.get(t) ?? (byTrack.set(t, { slices: [], blocks: [], labelEnd }).get(t)!);
  data.slices.track.forEach((t, i) => slot(t).slices.push(i));
  data.blocks.track.forEach((t, i) => slot(t).blocks.push(i));
  for (const mine of byTrack.values()) labelEndsInOrder(byLaneAndStart(mine.slices, ts, lane), ts, dur, lane, labelEnd);
  return byTrack;
}

/** How a slice is highlighted: selected, matching the search, linked (the selected collective's), or none. */
interface Look { selected: boolean; matched: boolean; linked: boolean; }
const PLAIN: Look = { selected: false, matched: false, linked: false };

function lookOf(s: SliceScene, id: EventId): Look {
  const look = { selected: s.selected === id, matched: s.matches.has(id), linked: s.linked.has(id) };
  return look.selected || look.matched || look.linked ? look : PLAIN;
}

/** Per lane, the pixel column the last slice under a pixel wide filled and where the last instant's
 *  diamond was drawn: slices under a pixel draw once per column, instants once per diamond width. */
class PixelMerge {
  private readonly column: Float64Array;
  private readonly diamond: Float64Array;

  constructor(lanes: number) {
    this.column = new Float64Array(lanes).fill(-Infinity);
    this.diamond = new Float64Array(lanes).fill(-Infinity);
  }

  /** Whether a thin slice or an instant at `x` is merged into the mark already drawn there (else it is the new mark). */
  merged(lane: number, x: number, instant: boolean): boolean {
    if (instant) {
      if (x - this.diamond[lane] < 2 * INSTANT_R) return true;
      this.diamond[lane] = x;
      return false;
    }
    const column = Math.floor(x);
    if (this.column[lane] === column) return true;
    this.column[lane] = column;
    return false;
  }
}

/** Draws one track's blocks then slices, lanes below `lanes` only, the track's top at `y`. */
export function drawSlices(ctx: CanvasRenderingContext2D, s: SliceScene, mine: TrackIndex, lanes: number, y: number): void {
  drawBlocks(ctx, s, mine, lanes, y);
  const { vp, data: d } = s;
  const px = (vp.end - vp.start) / vp.width;
  const merge = new PixelMerge(lanes);
  const flagged = s.selected !== undefined || s.matches.size > 0 || s.linked.size > 0;
  const paint: SlicePaint = { ctx, s, y, width: textWidths(ctx), labelEnd: mine.labelEnd };
  for (const i of mine.slices) {
    const lane = d.slices.lane[i];
    if (lane >= lanes) continue;
    const x0 = toPx(vp, d.slices.ts[i]);
    const w = Math.max(d.slices.dur[i] / px, 1);
    if (x0 + w < -INSTANT_R || x0 - INSTANT_R > vp.width) continue;
    const look = flagged ? lookOf(s, d.slices.id[i]) : PLAIN;
    const instant = d.slices.dur[i] === 0;
    if ((w <= 1 || instant) && look === PLAIN && merge.merged(lane, x0, instant)) continue;
    drawSlice(paint, i, x0, w, look);
  }
}

/** What drawing one slice needs besides the slice: the canvas, the scene, the track's top, the label widths. */
interface SlicePaint { ctx: CanvasRenderingContext2D; s: SliceScene; y: number; width: (text: string) => number; labelEnd: Float64Array; }

function drawSlice(p: SlicePaint, i: number, x0: number, w: number, look: Look): void {
  const { ctx, s } = p;
  const d = s.data;
  const top = p.y + ROW_PAD + d.slices.lane[i] * SLICE_H;
  const style = styleOf(s, d.slices.name[i]);
  if (d.slices.dur[i] === 0) {
    drawInstant(ctx, x0, top, style.fill, look.selected, look.matched);
    return;
  }
  ctx.fillStyle = style.fill;
  ctx.fillRect(x0, top, w, SLICE_H - 1);
  if (look.matched || look.linked) {
    ctx.strokeStyle = look.linked ? LINK_COLOR : MATCH_COLOR;
    ctx.lineWidth = 2;
    ctx.strokeRect(x0, top, Math.max(w, 2), SLICE_H - 1);
  }
  if (look.selected) {
    ctx.strokeStyle = canvasColors().outline;
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 + 1, top + 1, Math.max(w - 2, 1), SLICE_H - 3);
  }
  const x1 = Math.min(x0 + w, toPx(s.vp, p.labelEnd[i]), s.vp.width);
  if (x1 - Math.max(x0, 0) > 24) drawLabel(ctx, d.strings[d.slices.name[i]], Math.max(x0, 0), x1, top, style.text, p.width);
}

/** A name's fill and label colour (CSS), worked out once per window and tint: a slice's, or a block's at
 *  one of SHADES + 1 shades by how busy it is (opacity 0.35 to 0.9, steps of 0.055 no eye tells apart). */
interface NameStyle { fill: string; text: string; }
const SHADES = 10;
const styles = new WeakMap<WindowData, { tint: Tint | null | undefined; byKey: Map<number, NameStyle> }>();

function styleOf(s: SliceScene, name: number, shade: number | null = null): NameStyle {
  let known = styles.get(s.data);
  if (!known || known.tint !== s.tint) styles.set(s.data, (known = { tint: s.tint, byKey: new Map() }));
  const key = name * (SHADES + 2) + (shade === null ? 0 : 1 + shade);
  let style = known.byKey.get(key);
  if (!style) {
    const fill = fillOf(s.tint, s.data.strings[name], shade === null ? 1 : 0.35 + (0.55 * shade) / SHADES);
    style = { fill: fill.css, text: textOn(fill.rgb) };
    known.byKey.set(key, style);
  }
  return style;
}

function drawBlocks(ctx: CanvasRenderingContext2D, s: SliceScene, mine: TrackIndex, lanes: number, y: number): void {
  const { vp, data: d } = s;
  const width = textWidths(ctx);
  for (const i of mine.blocks) {
    const x0 = Math.max(toPx(vp, d.blocks.ts[i]), -10);
    const x1 = Math.min(toPx(vp, d.blocks.end[i]), vp.width + 10);
    if (x1 < 0 || x0 > vp.width) continue;
    if (d.blocks.lane[i] >= lanes) continue; // beyond the lane limit
    const density = Math.min(1, d.blocks.busy[i] / Math.max(d.blocks.end[i] - d.blocks.ts[i], 1));
    const top = y + ROW_PAD + d.blocks.lane[i] * SLICE_H;
    const style = styleOf(s, d.blocks.name[i], Math.round(density * SHADES));
    ctx.fillStyle = style.fill;
    ctx.fillRect(x0, top, Math.max(x1 - x0, 1), SLICE_H - 1);
    if (x1 - x0 > 70) drawLabel(ctx, `${formatCount(d.blocks.count[i])} events`, x0, x1, top, style.text, width);
  }
}

/** `text` in [x0, x1] (3 px in from each end), cut with an ellipsis by its measured width. */
function drawLabel(ctx: CanvasRenderingContext2D, text: string, x0: number, x1: number, top: number, color: string,
  width: (text: string) => number): void {
  const room = x1 - x0 - 6;
  if (room < 12) return;
  const fitted = fitText(text, room, width);
  if (!fitted) return;
  ctx.fillStyle = color;
  ctx.fillText(fitted, x0 + 3, top + SLICE_H / 2, room);
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
