// The drawer's Area tab: the table and the flamegraph side by side; its aggregation by name, kind and rank (all rows, ops only or device
// work only), the flamegraph of its stacks (a clicked frame filters the table to its name), and busy time per track.
import type { AreaRow, AreaSummary, RangeSummary } from "../lib/api";
import { get } from "../lib/api";
import { append, clear, h, table } from "../lib/dom";
import { Flamegraph } from "./flamegraph";
import { formatCount, formatDuration } from "../lib/format";
import type { Area } from "../lib/selection";

export type AreaView = "all" | "ops" | "kernels";
const VIEWS: [AreaView, string][] = [["all", "everything"], ["ops", "ops only"], ["kernels", "kernels only"]];

export class AreaPanel {
  private view: AreaView = "all";
  private nameFilter: string | null = null;
  private rows: AreaRow[] = [];
  private groups = 0;
  private readonly tableBox = h("div", { class: "area-table" });
  private readonly filterNote = h("p", { class: "area-filter" });

  constructor(readonly panel: HTMLElement, private readonly trackName: (id: number) => string) {}

  /** Fetches and shows `area`; resolves once it is drawn. */
  async show(area: Area): Promise<void> {
    const params = { start: area.start, end: area.end, tracks: area.tracks.join(",") };
    const [summary, range] = await Promise.all([
      get<AreaSummary>("/api/area", { ...params, view: this.view }), get<RangeSummary>("/api/range", params)]);
    this.nameFilter = null;
    this.rows = summary.aggregate.rows;
    this.groups = summary.aggregate.groups;
    const p = this.panel;
    clear(p);
    const span = Math.max(area.end - area.start, 1);
    const flame = new Flamegraph(summary.flame.nodes, (name) => { this.nameFilter = name; this.renderTable(); });
    const views = h("div", { class: "area-views", role: "group", "aria-label": "Which rows" }, ...VIEWS.map(([v, label]) =>
      h("button", { "data-view": v, class: v === this.view ? "active" : "", onclick: () => void this.setView(v, area) }, label)));
    append(p, h("h3", {}, `Selected ${formatDuration(span)} on ${area.tracks.length} track(s)`),
      h("p", { class: "muted" }, `from ${formatDuration(area.start)} to ${formatDuration(area.end)} · tick or untick a track's box to change the tracks`),
      h("div", { class: "area-split" },
        h("div", { class: "area-left" }, views, this.filterNote, this.tableBox,
          h("h4", {}, "Busy time per track"), table(["track", "busy", "%"], range.busy.map((b) => [this.trackName(b.track), formatDuration(b.busy_ns), `${((100 * b.busy_ns) / span).toFixed(1)}%`]))),
        h("div", { class: "area-right" },
          h("h4", {}, "Flamegraph (stacks merged by name, width = time inside the selection)"), flame.root,
          summary.flame.pruned ? h("p", { class: "muted" }, `${formatCount(summary.flame.pruned)} small frames left out`) : null)));
    this.renderTable();
    flame.draw();
  }

  private async setView(view: AreaView, area: Area): Promise<void> {
    this.view = view;
    const summary = await get<AreaSummary>("/api/area", { start: area.start, end: area.end, tracks: area.tracks.join(","), view });
    this.rows = summary.aggregate.rows;
    this.groups = summary.aggregate.groups;
    for (const b of this.panel.querySelectorAll<HTMLElement>(".area-views button")) b.classList.toggle("active", b.dataset.view === view);
    this.renderTable();
  }

  private renderTable(): void {
    const shown = this.nameFilter === null ? this.rows : this.rows.filter((r) => r.name === this.nameFilter);
    clear(this.filterNote);
    if (this.nameFilter !== null) append(this.filterNote, `rows named `, h("code", {}, this.nameFilter), " (the flamegraph frame clicked; click its parent to widen)");
    const more = this.groups > this.rows.length ? ` (the ${formatCount(this.rows.length)} largest of ${formatCount(this.groups)})` : "";
    this.tableBox.replaceChildren(h("p", { class: "muted" }, `${formatCount(shown.length)} row(s) by name, kind and rank${more}; times inside the selection`),
      table(["name", "kind", "rank", "count", "self", "total", "mean", "max"], shown.map((r) => [r.name, r.kind, String(r.rank),
        formatCount(r.count), formatDuration(r.self_ns), formatDuration(r.total_ns), formatDuration(r.mean_ns), formatDuration(r.max_ns)])));
  }
}
