// The timeline's level-of-detail fetches: the window of slices and blocks, the counters' samples and
// the search matches for the tracks in view, a quarter of the view past each side.
import type { CounterData, EventId, Matches, WindowData } from "../lib/api";
import { get } from "../lib/api";
import type { ClockShifts } from "../lib/clocks";
import type { Viewport } from "../lib/viewport";

/** What to fetch: the tracks in view (those of folded groups too), those drawn as ops only, the counters. */
export interface WindowRequest {
  vp: Viewport;
  tracks: number[];
  opsOnly: number[];
  counters: number[];
  matchQuery: string;
}

export interface WindowAnswer { data: WindowData; counters: CounterData | null; matches: Set<EventId>; }

export async function fetchWindow(apiBase: string, req: WindowRequest, clocks: ClockShifts, signal: AbortSignal): Promise<WindowAnswer> {
  const { vp, tracks, counters } = req;
  const span = vp.end - vp.start;
  const start = Math.floor(vp.start - span / 4);
  const end = Math.ceil(vp.end + span / 4);
  const px = Math.round(vp.width * 1.5);
  const [data, counterData, matches] = await Promise.all([
    get<WindowData>(`${apiBase}/api/window`, { start, end, px, tracks: tracks.join(","), ops: req.opsOnly.join(","),
      ...(clocks.shifting ? { shifts: tracks.map((t) => clocks.shiftOf(t)).join(",") } : {}) }, signal),
    counters.length ? get<CounterData>(`${apiBase}/api/counters`, { start, end, px, ids: counters.join(","),
      ...(clocks.shifting ? { shifts: counters.map((c) => clocks.shiftOfCounter(c)).join(",") } : {}) }, signal) : Promise.resolve(null),
    req.matchQuery ? get<Matches>(`${apiBase}/api/matches`, { q: req.matchQuery, start, end, tracks: tracks.join(",") }, signal)
      : Promise.resolve(null),
  ]);
  return { data, counters: counterData, matches: new Set(matches?.ids ?? []) };
}
