// A query result pinned as a track: rows with ts_ns (epoch ns, as the dataset stores it), dur_ns and
// name, laid out in lanes so that overlapping rows do not hide each other, drawn under the time axis.
import type { SqlResult } from "../../lib/api";
import { colorFor, fillRgb, textOn } from "../../lib/color";
import type { Viewport } from "../../lib/viewport";
import { toNs, toPx } from "../../lib/viewport";
import { canvasColors } from "../../lib/theme";

export const PIN_LANE_PX = 14;
export const PIN_MAX_LANES = 6;

/** One row of the pinned result: times in ns from the run start, as the timeline draws them; `cells`, the
 *  row as the query gave it (one per column of its track). */
export interface PinnedSlice { ts: number; dur: number; name: string; lane: number; track: number | null; cells: unknown[]; }
export interface PinnedTrack { title: string; columns: string[]; slices: PinnedSlice[]; lanes: number; }

function offsetNs(cell: unknown, t0: bigint): number | null {
  if (typeof cell === "string" && /^-?\d+$/.test(cell)) return Number(BigInt(cell) - t0);
  const n = Number(cell);
  return cell === null || cell === undefined || cell === "" || !Number.isFinite(n) ? null : n - Number(t0);
}

/** The rows of `result` as slices (rows without a time left out), each in the first lane free at its
 *  start (the last lane takes the rest). */
export function pinnedTrack(result: SqlResult, t0Ns: string, title: string): PinnedTrack {
  const col = (name: string) => result.columns.indexOf(name);
  const [ts, dur, name, track] = [col("ts_ns"), col("dur_ns"), col("name"), col("track_id")];
  const t0 = BigInt(t0Ns || "0");
  const slices: PinnedSlice[] = [];
  for (const row of result.rows) {
    const start = offsetNs(row[ts], t0);
    if (start === null) continue;
    const d = Math.max(Number(row[dur]) || 0, 0);
    slices.push({ ts: start, dur: d, name: String(row[name] ?? ""), lane: 0, track: track >= 0 && row[track] !== null ? Number(row[track]) : null,
      cells: row });
  }
  slices.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const ends: number[] = [];
  for (const s of slices) {
    let lane = ends.findIndex((end) => end <= s.ts);
    if (lane < 0) lane = ends.length < PIN_MAX_LANES ? ends.length : PIN_MAX_LANES - 1;
    ends[lane] = Math.max(ends[lane] ?? -Infinity, s.ts + s.dur);
    s.lane = lane;
  }
  return { title, columns: result.columns, slices, lanes: Math.max(ends.length, 1) };
}

/** The slice under (x, y) of the pinned track's canvas (the shortest there, within 2 px), or null. */
export function pinnedAt(vp: Viewport, track: PinnedTrack, shift: (track: number | null) => number, x: number, y: number): PinnedSlice | null {
  const lane = Math.floor((y - 2) / PIN_LANE_PX);
  const t = toNs(vp, x);
  const near = 2 * (vp.end - vp.start) / vp.width;
  let best: PinnedSlice | null = null;
  for (const s of track.slices) {
    const at = s.ts + shift(s.track);
    if (s.lane !== lane || at - near > t || at + s.dur + near < t) continue;
    if (!best || s.dur < best.dur) best = s;
  }
  return best;
}

/** Draws the pinned track on `ctx` (`width` CSS px wide), `shift(track)` moving each row as its track is drawn
 *  (aligned clocks); `selected` outlined. */
export function drawPinned(ctx: CanvasRenderingContext2D, vp: Viewport, track: PinnedTrack, shift: (track: number | null) => number,
  selected: PinnedSlice | null = null): void {
  const lastPx = new Float64Array(track.lanes).fill(-1);
  ctx.font = "10px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  for (const s of track.slices) {
    const at = s.ts + shift(s.track);
    if (at > vp.end || at + s.dur < vp.start) continue;
    const x0 = Math.max(toPx(vp, at), -1);
    const x1 = Math.min(toPx(vp, at + s.dur), vp.width + 1);
    const y = 2 + s.lane * PIN_LANE_PX;
    if (x1 - x0 < 1 && Math.floor(x0) === lastPx[s.lane]) continue; // one thin slice per pixel column and lane
    lastPx[s.lane] = Math.floor(x0);
    const fill = fillRgb(s.name);
    ctx.fillStyle = colorFor(s.name);
    ctx.fillRect(x0, y, Math.max(x1 - x0, 1), PIN_LANE_PX - 2);
    if (x1 - x0 > 30) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(x0, y, x1 - x0, PIN_LANE_PX - 2);
      ctx.clip();
      ctx.fillStyle = textOn(fill);
      ctx.fillText(s.name, Math.max(x0, 0) + 3, y + (PIN_LANE_PX - 2) / 2);
      ctx.restore();
    }
  }
  if (selected) outline(ctx, vp, selected, selected.ts + shift(selected.track));
}

function outline(ctx: CanvasRenderingContext2D, vp: Viewport, s: PinnedSlice, at: number): void {
  if (at > vp.end || at + s.dur < vp.start) return;
  const x0 = Math.max(toPx(vp, at), -1);
  const x1 = Math.min(toPx(vp, at + s.dur), vp.width + 1);
  ctx.strokeStyle = canvasColors().outline;
  ctx.lineWidth = 2;
  ctx.strokeRect(x0 + 1, 2 + s.lane * PIN_LANE_PX + 1, Math.max(x1 - x0 - 2, 1), PIN_LANE_PX - 4);
}
