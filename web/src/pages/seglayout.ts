// Geometry of the allocator segment view: one row per segment in address order, its blocks laid
// along it by offset. Pure, so it is unit-tested.
import { formatBytes } from "../lib/format";

export interface SegBlock { addr: number | string; offset: number; size: number; requested: number; state: string; stack: number; size_exact: boolean; }
export interface Seg {
  addr: number | string; size: number; stream: number; pool: string; type: string; expandable: boolean;
  allocated_bytes: number; requested_bytes: number; pending_free_bytes: number; free_bytes: number; free_blocks: number; largest_free_bytes: number;
  stack: number; blocks: SegBlock[];
}
export interface SegTotals {
  reserved_bytes: number; segments: number; allocated_bytes: number; requested_bytes: number; pending_free_bytes: number;
  free_bytes: number; free_blocks: number; largest_free_bytes: number;
}

export interface RowGeom { top: number; left: number; width: number; }
export interface Geometry { rowHeight: number; labelWidth: number; stripWidth: number; }

/** Where each segment's strip lies: `toScale` draws widths proportional to the largest segment, else each fills the strip. */
export function segmentRows(segments: Seg[], g: Geometry, toScale: boolean): RowGeom[] {
  const largest = Math.max(1, ...segments.map((s) => s.size));
  return segments.map((s, i) => ({ top: i * g.rowHeight, left: g.labelWidth,
    width: Math.max(2, toScale ? (s.size / largest) * g.stripWidth : g.stripWidth) }));
}

/** The segment and block under (x, y), if any. */
export function blockAt(segments: Seg[], rows: RowGeom[], g: Geometry, x: number, y: number): { seg: Seg; block: SegBlock | null } | null {
  const i = Math.floor(y / g.rowHeight);
  if (i < 0 || i >= segments.length) return null;
  const seg = segments[i];
  const row = rows[i];
  if (x < row.left || x > row.left + row.width) return x < row.left ? { seg, block: null } : null;
  const offset = ((x - row.left) / row.width) * seg.size;
  const block = seg.blocks.find((b) => offset >= b.offset && offset < b.offset + b.size) ?? null;
  return { seg, block };
}

export const STATE_LABEL: Record<string, string> = {
  active_allocated: "allocated", active_pending_free: "pending free (freed, waiting on a stream that used it)", inactive: "cached free",
};

/** The fragmentation summary of a state. */
export function summaryText(t: SegTotals): string {
  const share = (n: number) => (t.reserved_bytes ? `${((100 * n) / t.reserved_bytes).toFixed(1)}%` : "");
  const rounding = t.allocated_bytes + t.pending_free_bytes - t.requested_bytes;
  return `reserved ${formatBytes(t.reserved_bytes)} in ${t.segments} segment${t.segments === 1 ? "" : "s"} · ` +
    `allocated ${formatBytes(t.allocated_bytes)} (${share(t.allocated_bytes)}${rounding > 0 ? `; ${formatBytes(rounding)} of it rounding` : ""}) · ` +
    `pending free ${formatBytes(t.pending_free_bytes)} · ` +
    `cached free ${formatBytes(t.free_bytes)} (${share(t.free_bytes)}) in ${t.free_blocks} block${t.free_blocks === 1 ? "" : "s"}, ` +
    `largest ${formatBytes(t.largest_free_bytes)}`;
}

export function hexAddr(addr: number | string): string {
  return `0x${BigInt(addr).toString(16)}`;
}
