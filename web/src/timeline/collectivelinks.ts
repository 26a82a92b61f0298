// Cross-rank collective links: a selected collective's instance on every rank (`/api/collective/{id}`),
// listed with each rank's arrival skew, highlighted on the timeline, and "align ranks on this collective".
import type { Details, EventId } from "../lib/api";
import type { ClockShifts } from "../lib/clocks";
import { rankKey } from "../lib/clocks";
import { h, table } from "../lib/dom";
import { formatDuration } from "../lib/format";

export interface CollectiveRank { run: string; rank: number; id: EventId; ts: number; dur: number; skew_ns: number; wait_ns: number; }
export interface CollectiveInstance {
  event_id: EventId; ranks: CollectiveRank[]; reason?: string;
  collective?: string; group?: string; number?: number; matched_by?: string; latency_ns?: number;
}

/** Whether `d` may be one rank's row of a collective instance: a collective kernel or a host collective. */
export function isCollective(d: Details): boolean {
  return Boolean(d.fields.collective) || d.fields.kind === "collective";
}

/** The instance's rows at their drawn times, each rank's skew measured from the earliest drawn start. */
export function drawnRows(inst: CollectiveInstance, clocks: ClockShifts): (CollectiveRank & { drawn_ts: number; drawn_skew_ns: number })[] {
  const drawn = inst.ranks.map((r) => ({ ...r, drawn_ts: r.ts + clocks.shiftOfRank(rankKey(r.run, r.rank)) }));
  const first = Math.min(...drawn.map((r) => r.drawn_ts));
  return drawn.map((r) => ({ ...r, drawn_skew_ns: r.drawn_ts - first }));
}

export function instanceName(inst: CollectiveInstance): string {
  return `${inst.collective ?? "collective"} #${inst.number ?? "?"}${inst.group ? ` of group ${inst.group}` : ""}`;
}

export interface CollectiveActions { select(id: EventId): void; align(by: "start" | "end" | null): void; }

/** The details panel's section: one row per rank (click: select it) and the alignment buttons. */
export function collectivePanel(inst: CollectiveInstance, clocks: ClockShifts, act: CollectiveActions): HTMLElement {
  if (!inst.ranks.length) return h("p", { class: "muted collective-links" }, `Other ranks: ${inst.reason ?? "none"}`);
  const rows = drawnRows(inst, clocks);
  const aligned = clocks.collective;
  const on = aligned && inst.ranks.some((r) => r.id === aligned.id) ? aligned.by : null; // aligned on this instance
  return h("div", { class: "collective-links" },
    h("h4", {}, `On every rank: ${instanceName(inst)}`),
    h("p", { class: "muted" }, `matched by ${inst.matched_by ?? "?"} · latency ${formatDuration(inst.latency_ns ?? 0)} · skew: start minus the earliest start as drawn`),
    table(["rank", "starts at", "skew", "wait"], rows.map((r) => [String(r.rank), formatDuration(r.drawn_ts), formatDuration(r.drawn_skew_ns),
      formatDuration(r.wait_ns)]), (i) => act.select(rows[i].id)),
    h("div", { class: "collective-align" },
      h("button", { class: on === "start" ? "active" : "", onclick: () => act.align(on === "start" ? null : "start") }, "align ranks on its starts"),
      h("button", { class: on === "end" ? "active" : "", onclick: () => act.align(on === "end" ? null : "end") }, "align ranks on its ends")));
}
