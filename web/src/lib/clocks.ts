// "Align clocks": each rank's events moved onto the run's lowest rank's clock by its estimated offset
// (`/api/meta` rank_clocks, from the ends of matched collectives). The window query shifts the drawn
// events (its `shifts` parameter); every event brief the page reads goes through `brief`, so the details,
// the selection outline, tooltips and ranges all speak of the same, shifted times.
import type { Brief, Chain, EventId, Meta } from "./api";

export interface RankClock { run: string; rank: number; offset_ns: number | null; uncertainty_ns: number | null; samples: number; }
export interface HostClock { run: string; rank: number; offset_ns: number | null; applied: boolean; }

const key = (run: string, rank: number) => `${run}:${rank}`;

/** "Align ranks on this collective": each rank's shift making its row of one instance start (or end) with the chosen rank's. */
export interface CollectiveAlignment { id: EventId; by: "start" | "end"; label: string; shifts: Map<string, number>; }

export class ClockShifts {
  aligned: boolean;
  /** Wins over the clock offsets while set. */
  collective: CollectiveAlignment | null = null;
  private readonly clocks = new Map<string, RankClock>();
  private readonly rankOfTrack = new Map<number, string>();
  private readonly rankOfCounter = new Map<number, string>();

  constructor(meta: Meta & { rank_clocks?: RankClock[]; clock_offsets?: HostClock[] }, aligned?: boolean) {
    for (const c of meta.rank_clocks ?? []) if (c.offset_ns !== null) this.clocks.set(key(c.run, c.rank), c);
    for (const t of meta.tracks) this.rankOfTrack.set(t.id, key(t.run, t.rank));
    for (const c of meta.counters) this.rankOfCounter.set(c.id, key(c.run, c.rank));
    // on by default only where ranks sit on hosts whose clocks differ
    this.aligned = aligned ?? (meta.clock_offsets ?? []).some((c) => c.applied && (c.offset_ns ?? 0) !== 0);
  }

  /** Whether there is anything to align: some rank's clock measured off the reference by more than its uncertainty. */
  get available(): boolean {
    return [...this.clocks.values()].some(significant);
  }

  /** Whether any rank is drawn shifted. */
  get shifting(): boolean {
    return this.aligned || this.collective !== null;
  }

  /** ns added to the times of `track`'s events as drawn (0 unless aligned). */
  shiftOf(track: number): number {
    return this.shiftOfRank(this.rankOfTrack.get(track) ?? "");
  }

  /** ns added to the times of counter `id`'s samples as drawn. */
  shiftOfCounter(id: number): number {
    return this.shiftOfRank(this.rankOfCounter.get(id) ?? "");
  }

  /** ns added to the times of the rank `run:rank` as drawn. */
  shiftOfRank(rankKey: string): number {
    if (this.collective) return this.collective.shifts.get(rankKey) ?? 0;
    if (!this.aligned) return 0;
    const c = this.clocks.get(rankKey);
    return c?.offset_ns ? -c.offset_ns : 0;
  }

  /** `b` at its drawn time. */
  brief<T extends Brief>(b: T): T {
    const shift = this.shiftOf(b.track);
    return shift ? { ...b, ts: b.ts + shift } : b;
  }

  /** `c` with every brief at its drawn time. */
  chain(c: Chain): Chain {
    return { ...c, event: c.event && this.brief(c.event), upstream: c.upstream.map((b) => this.brief(b)),
      downstream: c.downstream.map((b) => this.brief(b)) };
  }

  /** The clock note of a rank's group header ("" where the rank is not shifted). */
  label(run: string, rank: number): string {
    if (this.collective) {
      const shift = this.collective.shifts.get(key(run, rank));
      return shift === undefined ? "not in the aligned collective" : `${formatShift(shift)} (aligned on ${this.collective.label})`;
    }
    const c = this.clocks.get(key(run, rank));
    if (!c || !c.offset_ns || (!this.aligned && !significant(c))) return "";
    const shift = formatShift(-c.offset_ns);
    const pm = c.uncertainty_ns !== null ? ` ±${formatShift(c.uncertainty_ns).replace(/^\+/, "")}` : "";
    return this.aligned ? `clock ${shift}${pm} (aligned)` : `clock off by ${formatShift(c.offset_ns)}${pm} (not aligned)`;
  }

  /** The header note of a group: its one rank's clock, when all its tracks are of one rank. */
  groupLabel(tracks: ({ run: string; rank: number } | undefined)[]): string {
    const known = tracks.filter((t): t is { run: string; rank: number } => !!t);
    const ranks = new Set(known.map((t) => key(t.run, t.rank)));
    return ranks.size === 1 ? this.label(known[0].run, known[0].rank) : "";
  }
}

/** An offset larger than its uncertainty: the rank's clock is off, not just its ranks' spread in leaving collectives. */
function significant(c: RankClock): boolean {
  return Math.abs(c.offset_ns ?? 0) > (c.uncertainty_ns ?? 0);
}

/** Shifts aligning every rank's row of an instance with `anchor`'s (by their starts or ends), from recorded times. */
export function collectiveShifts(rows: { run: string; rank: number; ts: number; dur: number }[], anchor: { run: string; rank: number },
  by: "start" | "end"): Map<string, number> {
  const at = (r: { ts: number; dur: number }) => (by === "start" ? r.ts : r.ts + r.dur);
  const ref = rows.find((r) => r.run === anchor.run && r.rank === anchor.rank) ?? rows[0];
  return new Map(rows.map((r) => [key(r.run, r.rank), at(ref) - at(r)]));
}

export const rankKey = key;

/** A clock shift: "−4.998 ms", "+3.5 µs", "0 ns" (ms to three decimals, µs to one). */
export function formatShift(ns: number): string {
  const sign = ns < 0 ? "−" : ns > 0 ? "+" : "";
  const abs = Math.abs(ns);
  if (abs >= 1e6) return `${sign}${(abs / 1e6).toFixed(3)} ms`;
  if (abs >= 1e3) return `${sign}${(abs / 1e3).toFixed(1)} µs`;
  return `${sign}${Math.round(abs)} ns`;
}
