// Grouping a query result by one of its columns: per value the count and, where the result has them,
// the sum (total), mean and max of `dur_ns` and the sum of `self_ns`. The area's pivot is the server's.
import type { PivotRow } from "./api";

/** `rows` grouped by column `by`, largest total (then count) first; NULL is a group of its own. */
export function pivotRows(columns: string[], rows: readonly (readonly unknown[])[], by: string): PivotRow[] {
  const at = columns.indexOf(by);
  if (at < 0) return [];
  const dur = columns.indexOf("dur_ns");
  const self = columns.indexOf("self_ns");
  const groups = new Map<string, PivotRow>();
  const num = (v: unknown) => { const n = Number(v); return v === null || v === undefined || !Number.isFinite(n) ? 0 : n; };
  for (const row of rows) {
    const cell = row[at];
    const key = cell === null || cell === undefined ? "NULL" : typeof cell === "object" ? JSON.stringify(cell) : String(cell);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { key, count: 0, self_ns: 0, total_ns: 0, mean_ns: 0, max_ns: 0 }));
    g.count += 1;
    if (dur >= 0) {
      const d = num(row[dur]);
      g.total_ns += d;
      g.max_ns = Math.max(g.max_ns, d);
    }
    if (self >= 0) g.self_ns += num(row[self]);
  }
  const out = [...groups.values()];
  for (const g of out) g.mean_ns = Math.round(g.total_ns / g.count);
  return out.sort((a, b) => b.total_ns - a.total_ns || b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
