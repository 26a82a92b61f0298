// Summary page: per-rank step times, busy/idle, top kernels and ops, communication overlap.
import type { Meta, Summary } from "./api";
import { get } from "./api";
import { barChart } from "./charts";
import { append, h, table } from "./dom";
import { formatCount, formatDuration } from "./format";
import { trackLabel } from "./tracks";

export class SummaryPage {
  readonly root = h("div", { class: "page summary-page" });

  constructor(private readonly meta: Meta) {
    void this.load();
  }

  private async load(): Promise<void> {
    const s = await get<Summary>("/api/summary");
    const ranks = [...new Set(s.steps.map((x) => `${x.run}:${x.rank}`))];
    const stepCards = ranks.map((key) => {
      const steps = s.steps.filter((x) => `${x.run}:${x.rank}` === key);
      const mean = steps.reduce((a, x) => a + x.dur, 0) / Math.max(steps.length, 1);
      return { key, steps, mean };
    });
    const slowest = stepCards.reduce((a, b) => (b.mean > (a?.mean ?? -1) ? b : a), stepCards[0]);
    append(this.root,
      h("section", { class: "cards" },
        card("events", formatCount(this.meta.event_count)), card("ranks", String(this.meta.sessions.length || ranks.length)),
        card("profiled time", formatDuration(this.meta.span_ns)), card("warnings", String(this.meta.warnings.length)),
        slowest ? card("slowest rank (mean step)", `rank ${slowest.key.split(":")[1]} · ${formatDuration(slowest.mean)}`) : null),
      h("section", { class: "grid2" },
        stepCards.length ? barChart(stepCards.map((c) => ({ label: `rank ${c.key.split(":")[1]}`, value: c.mean,
          text: `${formatDuration(c.mean)} mean of ${c.steps.length} steps` })), "Step time per rank (ProfilerStep#N)")
          : h("p", { class: "empty" }, "No ProfilerStep#N annotations: profile with a schedule and prof.step() to get step times."),
        barChart(s.busy.map((b) => ({ label: `rank ${b.rank} · ${trackLabel({ ...b, id: b.track, pid: 0, events: 0, depths: 1 })}`,
          value: b.span_ns, text: `${((100 * b.busy_ns) / Math.max(b.span_ns, 1)).toFixed(1)}% busy`,
          parts: [{ value: b.busy_ns, cls: "busy", title: `busy ${formatDuration(b.busy_ns)}` },
            { value: Math.max(b.span_ns - b.busy_ns, 0), cls: "idle", title: `idle ${formatDuration(b.span_ns - b.busy_ns)}` }] })), "Busy / idle per track"),
        barChart(s.top_kernels.map((k) => ({ label: k.name, value: k.total_ns, text: `${formatDuration(k.total_ns)} · ${formatCount(k.count)}×` })), "Top device kernels"),
        barChart(s.top_ops.map((k) => ({ label: k.name, value: k.total_ns, text: `${formatDuration(k.total_ns)} · ${formatCount(k.count)}×` })), "Top framework ops (inclusive)"),
        s.communication.length ? barChart(s.communication.map((c) => ({ label: `rank ${c.rank}`, value: c.comm_ns,
          text: `${((100 * c.overlapped_ns) / Math.max(c.comm_ns, 1)).toFixed(0)}% of ${formatDuration(c.comm_ns)} overlapped`,
          parts: [{ value: c.overlapped_ns, cls: "busy", title: `overlapped with compute ${formatDuration(c.overlapped_ns)}` },
            { value: c.comm_ns - c.overlapped_ns, cls: "exposed", title: `exposed ${formatDuration(c.comm_ns - c.overlapped_ns)}` }] })), "Communication overlapped with compute")
          : h("p", { class: "empty" }, "No collective kernels found.")),
      h("h3", {}, "Steps"), table(["rank", "step", "start", "duration"], s.steps.map((x) => [String(x.rank), x.name, formatDuration(x.ts), formatDuration(x.dur)])));
  }
}

function card(label: string, value: string): HTMLElement {
  return h("div", { class: "card" }, h("div", { class: "card-value" }, value), h("div", { class: "card-label" }, label));
}
