// The drawer's Pivot tab: the area selection (grouped on the server: name, kind, rank, track,
// category or one argument) or the last query result (grouped here by any of its columns), per value
// count, self, total, mean and max, in a virtualized table sortable by any column.
import type { PivotResult, PivotRow, SqlResult } from "../lib/api";
import { get } from "../lib/api";
import { append, clear, h } from "../lib/dom";
import { formatCount, formatDuration } from "../lib/format";
import { pivotRows } from "../lib/pivot";
import type { Area } from "../lib/selection";
import { VirtualTable } from "./vtable";

export const AREA_PIVOTS = ["name", "kind", "rank", "track", "category", "arg"];
const VIEWS: [string, string][] = [["all", "everything"], ["ops", "ops"], ["kernels", "kernels"]];

type Source = { kind: "area"; area: Area } | { kind: "query"; result: SqlResult };

export class PivotPanel {
  readonly panel = h("div", { class: "panel pivot-panel", "data-panel": "pivot" },
    h("p", { class: "muted" }, "Select an area (Shift+drag) or run a query, then group it here by any column."));
  private source: Source | null = null;
  private by = "name";
  private arg = "Input Dims";
  private view = "all";
  private readonly out = h("div", { class: "pivot-out" });

  constructor(private readonly trackName: (id: number) => string) {}

  /** Groups `area` (shown when the Pivot tab is opened, or now if `now`). */
  setArea(area: Area, now = false): void {
    this.source = { kind: "area", area };
    if (!AREA_PIVOTS.includes(this.by)) this.by = "name";
    if (now) void this.render();
  }

  setQuery(result: SqlResult): void {
    this.source = { kind: "query", result };
    if (!result.columns.includes(this.by)) this.by = result.columns.includes("name") ? "name" : result.columns[0];
    void this.render();
  }

  async render(): Promise<void> {
    const src = this.source;
    if (!src) return;
    clear(this.panel);
    const columns = src.kind === "area" ? AREA_PIVOTS : src.result.columns;
    const bySelect = h("select", { class: "pivot-by", "aria-label": "Group by" }, ...columns.map((c) =>
      h("option", { value: c, selected: c === this.by }, c === "arg" ? "argument…" : c)));
    bySelect.addEventListener("change", () => { this.by = bySelect.value; void this.render(); });
    const argBox = h("input", { class: "pivot-arg", value: this.arg, placeholder: "argument key, e.g. Input Dims", "aria-label": "Argument key" });
    argBox.addEventListener("change", () => { this.arg = argBox.value.trim(); void this.render(); });
    const viewSelect = h("select", { class: "pivot-view", "aria-label": "Which rows" }, ...VIEWS.map(([v, label]) => h("option", { value: v, selected: v === this.view }, label)));
    viewSelect.addEventListener("change", () => { this.view = viewSelect.value; void this.render(); });
    const what = src.kind === "area" ? `the area (${formatDuration(src.area.end - src.area.start)} on ${src.area.tracks.length} track(s))`
      : `the query result (${formatCount(src.result.rows.length)} rows)`;
    append(this.panel, h("div", { class: "pivot-bar" }, `Group ${what} by `, bySelect,
      src.kind === "area" && this.by === "arg" ? argBox : null, src.kind === "area" ? viewSelect : null), this.out);
    clear(this.out);
    let rows: PivotRow[];
    let note = "";
    if (src.kind === "area") {
      const a = src.area;
      const found = await get<PivotResult>("/api/area/pivot", { start: a.start, end: a.end, tracks: a.tracks.join(","), by: this.by, arg: this.arg, view: this.view });
      if (this.source !== src) return;
      rows = found.rows;
      note = `${formatCount(found.groups)} group(s)${found.groups > rows.length ? `, the ${formatCount(rows.length)} largest` : ""}; times inside the area`;
    } else {
      rows = pivotRows(src.result.columns, src.result.rows, this.by);
      const timed = src.result.columns.includes("dur_ns");
      note = `${formatCount(rows.length)} group(s)${timed ? "; total, mean and max of dur_ns" : "; add a dur_ns column for times"}${src.result.columns.includes("self_ns") ? ", self of self_ns" : ""}`;
    }
    const label = this.by === "track" && src.kind === "area" ? (k: string) => this.trackName(Number(k)) : (k: string) => (k === "" ? "(none)" : k);
    const table = new VirtualTable([this.by === "arg" ? this.arg : this.by, "count", "self", "total", "mean", "max"],
      rows.map((r) => [label(r.key), r.count, r.self_ns, r.total_ns, r.mean_ns, r.max_ns]),
      { textColumns: new Set([0]), format: (cell, c) => (c === 0 ? String(cell) : c === 1 ? formatCount(Number(cell)) : formatDuration(Number(cell))) });
    append(this.out, h("p", { class: "muted" }, note), table.root);
  }
}
