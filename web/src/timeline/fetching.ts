// The timeline's level-of-detail fetches: the window of slices and blocks, the counters' samples and
// the search matches for the tracks in view, a quarter of the view past each side.
import type { CounterData, EventId, Matches, WindowData } from "../lib/api";
import { get } from "../lib/api";
import type { ClockShifts } from "../lib/clocks";
import type { Viewport } from "../lib/viewport";
import { clamp, zoom } from "../lib/viewport";

/** The times (ns from the run start) and pixels of a window fetched for a view: a quarter of the view past
 *  each side, as many pixels; whether the answer was capped (known once it came). */
export interface FetchedWindow { start: number; end: number; px: number; truncated: boolean; }

export function windowFor(vp: Viewport): FetchedWindow {
  const span = vp.end - vp.start;
  return { start: Math.floor(vp.start - span / 4), end: Math.ceil(vp.end + span / 4), px: Math.round(vp.width * 1.5), truncated: false };
}

/** How far the zoom may move from the one a window was fetched for (either way) before it is fetched anew. */
export const REUSE_ZOOM = 1.5;

/** Whether the window fetched, or being fetched, still serves `vp`: `vp` lies inside it, its pixels are
 *  within REUSE_ZOOM of the window's (one W or S, or a wheel notch), and the answer was not capped. Then a
 *  move draws what it holds at once and asks the server nothing. */
export function serves(w: FetchedWindow | null, vp: Viewport): boolean {
  if (!w || w.truncated || vp.start < w.start || vp.end > w.end) return false;
  const ratio = (vp.end - vp.start) / vp.width / ((w.end - w.start) / w.px);
  return ratio >= 1 / REUSE_ZOOM && ratio <= REUSE_ZOOM;
}

/** The zooms fetched ahead once a window is answered: two steps in and out (W W, S S: 0.7 each), about the
 *  view's middle, where the keys anchor when the pointer is off the canvas. One step is served by the window
 *  held; two are not, and a fetch after the 40 ms that moves wait for took 100-160 ms to settle. */
export const AHEAD_ZOOMS = [0.49, 1 / 0.49];

/** The windows to fetch ahead of `vp` (kept within `extent`, as moves are): those the views AHEAD_ZOOMS away
 *  need, unless `held` serves such a view already (as at the full view, which cannot zoom out). */
export function windowsAhead(vp: Viewport, extent: { start: number; end: number }, held: FetchedWindow | null): FetchedWindow[] {
  return AHEAD_ZOOMS.map((f) => clamp(zoom(vp, f, vp.width / 2), extent.start, extent.end))
    .filter((v) => !serves(held, v)).map(windowFor);
}

/** What a window's answer depends on besides its times: an answer fetched ahead serves a later request only
 *  when these are the same. */
export function requestKey(req: Omit<WindowRequest, "window">, clocks: ClockShifts): string {
  const shifts = clocks.shifting ? [req.tracks.map((t) => clocks.shiftOf(t)), req.counters.map((c) => clocks.shiftOfCounter(c))] : [];
  return JSON.stringify([req.tracks, req.opsOnly, req.counters, req.matchQuery, shifts]);
}

/** What to fetch: the window, the tracks in view (those of folded groups too), those drawn as ops only, the counters. */
export interface WindowRequest {
  window: FetchedWindow;
  tracks: number[];
  opsOnly: number[];
  counters: number[];
  matchQuery: string;
}

export interface WindowAnswer { data: WindowData; counters: CounterData | null; matches: Set<EventId>; }

/** The window, counters and matches of `req`; `ahead`: fetched ahead of the view (marked `ahead=1` in the
 *  window's URL, which the server ignores). */
export async function fetchWindow(apiBase: string, req: WindowRequest, clocks: ClockShifts, signal: AbortSignal,
  ahead = false): Promise<WindowAnswer> {
  const { tracks, counters } = req;
  const { start, end, px } = req.window;
  const [data, counterData, matches] = await Promise.all([
    get<WindowData>(`${apiBase}/api/window`, { start, end, px, tracks: tracks.join(","), ops: req.opsOnly.join(","), ...(ahead ? { ahead: 1 } : {}),
      ...(clocks.shifting ? { shifts: tracks.map((t) => clocks.shiftOf(t)).join(",") } : {}) }, signal),
    counters.length ? get<CounterData>(`${apiBase}/api/counters`, { start, end, px, ids: counters.join(","),
      ...(clocks.shifting ? { shifts: counters.map((c) => clocks.shiftOfCounter(c)).join(",") } : {}) }, signal) : Promise.resolve(null),
    req.matchQuery ? get<Matches>(`${apiBase}/api/matches`, { q: req.matchQuery, start, end, tracks: tracks.join(",") }, signal)
      : Promise.resolve(null),
  ]);
  return { data, counters: counterData, matches: new Set(matches?.ids ?? []) };
}
