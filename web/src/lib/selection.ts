// Area selections: a time range over chosen tracks, kept in the deep link as `area=start,end,track,track,...`.

export interface Area { start: number; end: number; tracks: number[]; }

export function formatArea(a: Area): string {
  return [Math.round(a.start), Math.round(a.end), ...a.tracks].join(",");
}

/** The area of a link's `area` parameter; undefined when it is malformed (fewer than 2 numbers, end <= start). */
export function parseArea(text: string | undefined): Area | undefined {
  if (!text) return undefined;
  const parts = text.split(",").map((p) => p.trim());
  if (parts.length < 2 || parts.some((p) => p === "" || !Number.isFinite(Number(p)))) return undefined;
  const [start, end, ...tracks] = parts.map(Number);
  if (end <= start) return undefined;
  return { start, end, tracks: [...new Set(tracks.filter((t) => Number.isInteger(t) && t >= 0))] };
}

/** Track ids of the slice rows a vertical drag from `y0` to `y1` (content coordinates) crosses. */
export function tracksCrossed(rows: { y: number; height: number; kind: string; id?: number }[], y0: number, y1: number): number[] {
  const top = Math.min(y0, y1);
  const bottom = Math.max(y0, y1);
  return rows.filter((r) => r.kind === "slice" && r.id !== undefined && r.y + r.height > top && r.y <= bottom).map((r) => r.id!);
}

/** `tracks` with `id` added, or removed when it is there (a label's checkbox). */
export function toggleTrack(tracks: number[], id: number): number[] {
  return tracks.includes(id) ? tracks.filter((t) => t !== id) : [...tracks, id].sort((a, b) => a - b);
}
