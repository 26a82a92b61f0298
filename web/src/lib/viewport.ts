// The visible time window and its mapping to pixels; pure functions so zoom and pan are testable.

export interface Viewport { start: number; end: number; width: number; }

export const MIN_SPAN_NS = 100;

export function toPx(v: Viewport, ns: number): number {
  return ((ns - v.start) / (v.end - v.start)) * v.width;
}

export function toNs(v: Viewport, px: number): number {
  return v.start + (px / v.width) * (v.end - v.start);
}

/** Keeps the window inside [lo, hi] (with a margin) and no narrower than MIN_SPAN_NS. */
export function clamp(v: Viewport, lo: number, hi: number): Viewport {
  const margin = (hi - lo) * 0.02;
  const maxSpan = hi - lo + 2 * margin;
  let span = Math.min(Math.max(v.end - v.start, MIN_SPAN_NS), Math.max(maxSpan, MIN_SPAN_NS));
  let start = v.start;
  if (start < lo - margin) start = lo - margin;
  if (start + span > hi + margin) start = Math.max(lo - margin, hi + margin - span);
  span = Math.max(span, MIN_SPAN_NS);
  return { start, end: start + span, width: v.width };
}

/** Zooms by `factor` (<1 zooms in) keeping the time under pixel `anchorPx` fixed. */
export function zoom(v: Viewport, factor: number, anchorPx: number): Viewport {
  const anchor = toNs(v, anchorPx);
  const span = Math.max((v.end - v.start) * factor, MIN_SPAN_NS);
  const frac = anchorPx / v.width;
  return { start: anchor - frac * span, end: anchor - frac * span + span, width: v.width };
}

/** Pans by `px` pixels (positive moves the view later in time). */
export function pan(v: Viewport, px: number): Viewport {
  const dt = (px / v.width) * (v.end - v.start);
  return { start: v.start + dt, end: v.end + dt, width: v.width };
}

/** A window around [ts, ts+dur] with some room on both sides. */
export function focus(v: Viewport, ts: number, dur: number): Viewport {
  const span = Math.max(dur * 3, MIN_SPAN_NS * 10);
  const mid = ts + dur / 2;
  return { start: mid - span / 2, end: mid + span / 2, width: v.width };
}

/** The events' span (at least 1 µs) widened to every counter's first and last sample. */
export function drawnExtent(meta: { span_ns: number; counters: { first_ts?: number | null; last_ts?: number | null }[] }): { start: number; end: number } {
  let start = 0;
  let end = Math.max(meta.span_ns, 1000);
  for (const c of meta.counters) {
    if (c.first_ts !== undefined && c.first_ts !== null) start = Math.min(start, Number(c.first_ts));
    if (c.last_ts !== undefined && c.last_ts !== null) end = Math.max(end, Number(c.last_ts));
  }
  return { start, end };
}
