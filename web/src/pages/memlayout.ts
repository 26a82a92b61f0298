// Stacked layout of live allocations over time (the allocator tab): each allocation sits on top of
// every older live one, and drops down when an older one is freed. Pure, so it is unit-tested.
import type { Allocation } from "../lib/api";

export interface Band { alloc: Allocation; ts: number[]; offset: number[]; end: number; }

export function stackAllocations(allocs: Allocation[], endNs: number): { bands: Band[]; total: { ts: number[]; bytes: number[] } } {
  const sorted = [...allocs].sort((a, b) => a.alloc - b.alloc || a.i - b.i);
  const events: { ts: number; kind: 0 | 1; band: Band }[] = [];
  const bands = sorted.map((a) => ({ alloc: a, ts: [] as number[], offset: [] as number[], end: a.free ?? endNs }));
  for (const band of bands) {
    events.push({ ts: band.alloc.alloc, kind: 1, band });
    if (band.alloc.free !== null) events.push({ ts: band.alloc.free, kind: 0, band });
  }
  events.sort((a, b) => a.ts - b.ts || a.kind - b.kind);
  const live: Band[] = [];
  let total = 0;
  const totals = { ts: [] as number[], bytes: [] as number[] };
  for (const ev of events) {
    if (ev.kind === 1) {
      ev.band.ts.push(ev.ts);
      ev.band.offset.push(total);
      live.push(ev.band);
      total += ev.band.alloc.size;
    } else {
      const k = live.indexOf(ev.band);
      if (k < 0) continue;
      live.splice(k, 1);
      total -= ev.band.alloc.size;
      for (let j = k; j < live.length; j++) {
        const b = live[j];
        b.ts.push(ev.ts);
        b.offset.push(b.offset[b.offset.length - 1] - ev.band.alloc.size);
      }
    }
    totals.ts.push(ev.ts);
    totals.bytes.push(total);
  }
  return { bands, total: totals };
}

/** The band's offset at time t (the last step at or before t). */
export function offsetAt(band: Band, t: number): number | null {
  if (t < band.alloc.alloc || t >= band.end) return null;
  let lo = 0;
  let hi = band.ts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (band.ts[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return band.offset[lo];
}

/** The allocation whose band covers (t, bytes), if any. */
export function bandAt(bands: Band[], t: number, bytes: number): Band | null {
  for (const band of bands) {
    const o = offsetAt(band, t);
    if (o !== null && bytes >= o && bytes < o + band.alloc.size) return band;
  }
  return null;
}
