// Marks: named points in time on the timeline (M adds one), kept in the deep link, listed with
// the time between them, and exported as JSON. Pure functions; the timeline draws them.
import { formatDuration } from "./format";

export interface Mark { ts: number; name: string; }

export const MAX_MARKS = 50;
const NAME_MAX = 60;

/** `marks=ts~name,ts~name` from the URL (`%`, `,` and `~` in names percent-encoded); malformed entries are skipped. */
export function parseMarks(text: string | null | undefined): Mark[] {
  const found: Mark[] = [];
  for (const part of (text ?? "").split(",")) {
    const [ts, ...rest] = part.split("~");
    const value = Number(ts);
    if (ts === "" || !Number.isFinite(value) || value < 0) continue;
    let name = rest.join("~");
    try { name = decodeURIComponent(name); } catch { /* kept as written */ }
    found.push({ ts: Math.round(value), name: name.slice(0, NAME_MAX) });
  }
  return sortMarks(found).slice(0, MAX_MARKS);
}

export function formatMarks(marks: Mark[]): string {
  // only the separators and % are escaped: the URL's own encoding does the rest
  const escaped = (name: string) => name.replace(/[%,~]/g, (c) => encodeURIComponent(c));
  return sortMarks(marks).map((m) => `${Math.round(m.ts)}~${escaped(m.name)}`).join(",");
}

export function sortMarks(marks: Mark[]): Mark[] {
  return [...marks].sort((a, b) => a.ts - b.ts);
}

/** A new mark at `ts`, named M1, M2, ... after the marks there are (the first free number). */
export function addMark(marks: Mark[], ts: number): Mark[] {
  const taken = new Set(marks.map((m) => m.name));
  let n = 1;
  while (taken.has(`M${n}`)) n++;
  return sortMarks([...marks, { ts: Math.round(Math.max(ts, 0)), name: `M${n}` }]).slice(0, MAX_MARKS);
}

export interface MarkRow { name: string; at: string; sincePrevious: string; ts: number; }

/** The marks in time order, each with its time and the time since the previous one. */
export function markRows(marks: Mark[]): MarkRow[] {
  const sorted = sortMarks(marks);
  return sorted.map((m, i) => ({
    name: m.name, ts: m.ts, at: formatDuration(m.ts),
    sincePrevious: i ? `+${formatDuration(m.ts - sorted[i - 1].ts)}` : "",
  }));
}

/** The export document: each mark's offset from the run start and its absolute time (epoch ns, as a string). */
export function marksDocument(marks: Mark[], t0Ns: string): object {
  const t0 = BigInt(t0Ns || "0");
  return {
    version: 1,
    t0_ns: t0Ns,
    marks: sortMarks(marks).map((m) => ({ name: m.name, offset_ns: m.ts, time_ns: (t0 + BigInt(Math.round(m.ts))).toString() })),
  };
}
