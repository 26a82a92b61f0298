// Short labels that stay distinct: names cut to a common prefix ("void at::native::vectorized_elementwi…"
// five times over) keep their start, then jump to just before where they differ from the others; and
// slice labels that end where the next slice of their lane begins.

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** Each name as a label of about `room` characters that tells it from the others (full names belong in a tooltip). */
export function distinctLabels(names: string[], room = 34, head = 14, context = 6): string[] {
  return names.map((name, i) => {
    if (name.length <= room) return name;
    const prefixes = names.map((other, j) => (j === i ? 0 : commonPrefix(name, other)));
    const shared = Math.max(0, ...prefixes);
    if (shared < room - 1) return name; // its own start already tells it apart
    // the head reaches a little past where it parts from its nearer relatives ("void at::native::unrolled")
    const parts = Math.min(...prefixes.filter((p) => p >= head), shared);
    const start = Math.min(parts + 8, Math.floor(room * 0.7), shared);
    const keep = start > head && start < shared - context ? start : head;
    return `${name.slice(0, keep)}…${name.slice(Math.max(keep, shared - context))}`;
  });
}

/** `slices` (indexes into the window's columns `ts` and `lane`) ordered by lane, then start. */
export function byLaneAndStart(slices: number[], ts: number[], lane: number[]): number[] {
  return slices.sort((a, b) => lane[a] - lane[b] || ts[a] - ts[b] || a - b);
}

/** Where each slice's label must end (ns): its own end, or sooner the start of the next slice drawn on
 *  the same lane over it (slices of one depth that overlap), so that no label runs under another slice.
 *  `slices` are indexes into the window's columns `ts`, `dur`, `lane`. */
export function labelEnds(slices: number[], ts: number[], dur: number[], lane: number[]): Map<number, number> {
  const sorted = byLaneAndStart([...slices], ts, lane);
  const ends = new Float64Array(ts.length);
  labelEndsInOrder(sorted, ts, dur, lane, ends);
  return new Map(sorted.map((i) => [i, ends[i]]));
}

/** `labelEnds` of slices already ordered by lane, then start, written into `ends` (by slice index). */
export function labelEndsInOrder(sorted: number[], ts: number[], dur: number[], lane: number[], ends: Float64Array): void {
  for (let k = 0; k < sorted.length; k++) {
    const i = sorted[k];
    const next = sorted[k + 1];
    const end = ts[i] + dur[i];
    ends[i] = next !== undefined && lane[next] === lane[i] && ts[next] < end ? Math.max(ts[next], ts[i]) : end;
  }
}
