// The drawer's Query tab: a SELECT over the dataset whose result is a virtualized table (rows with an
// `id` or `ts_ns` open the timeline there), handed on to the pivot or pinned as a track.
import type { SqlResult } from "../lib/api";
import { post } from "../lib/api";
import { append, clear, h } from "../lib/dom";
import type { RowTarget } from "../lib/rowlinks";
import { resultTable } from "../pages/sqlpage";

export const PIN_COLUMNS = ["ts_ns", "dur_ns", "name"];
const EXAMPLE = `SELECT id, name, ts_ns, dur_ns FROM events WHERE kind = 'kernel' ORDER BY dur_ns DESC LIMIT 1000`;

export interface QueryEvents {
  open(target: RowTarget): void;
  /** "Pivot": group this result by one of its columns. */
  pivot(result: SqlResult): void;
  /** "Pin as track": draw the result's rows (ts_ns, dur_ns, name) on the timeline. */
  pin(result: SqlResult): void;
}

export function pinnable(result: SqlResult): boolean {
  return PIN_COLUMNS.every((c) => result.columns.includes(c));
}

export class QueryPanel {
  readonly panel = h("div", { class: "panel query-panel", "data-panel": "query" });
  private readonly editor = h("textarea", { class: "sql-editor query-editor", spellcheck: "false", rows: 3, "aria-label": "SQL query" });
  private readonly status = h("span", { class: "muted query-status" });
  private readonly pivotButton = h("button", { disabled: true, title: "Group this result by one of its columns", onclick: () => this.result && this.events.pivot(this.result) }, "Pivot");
  private readonly pinButton = h("button", { class: "pin-query", disabled: true, title: "Draw the rows on the timeline (needs ts_ns, dur_ns and name columns; rank and track_id optional)",
    onclick: () => this.result && this.events.pin(this.result) }, "Pin as track");
  private readonly out = h("div", { class: "query-out" });
  result: SqlResult | null = null;

  constructor(private readonly events: QueryEvents) {
    this.editor.value = EXAMPLE;
    this.editor.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.run();
      }
    });
    append(this.panel, h("div", { class: "query-bar" }, this.editor,
      h("div", { class: "query-actions" }, h("button", { class: "primary run-query", onclick: () => void this.run() }, "Run"), this.pivotButton, this.pinButton, this.status)),
    this.out);
  }

  async run(query?: string): Promise<void> {
    if (query !== undefined) this.editor.value = query;
    clear(this.out);
    this.status.textContent = "running…";
    try {
      this.show(await post<SqlResult>("/api/sql", { q: this.editor.value }));
    } catch (err) {
      this.result = null;
      this.status.textContent = "";
      append(this.out, h("p", { class: "error", role: "alert" }, (err as Error).message));
    }
  }

  /** Shows `result` (also for results made elsewhere, such as a benchmark's rows). */
  show(result: SqlResult): void {
    this.result = result;
    this.status.textContent = `${result.rows.length.toLocaleString("en-US")} row(s)${result.truncated ? " (truncated)" : ""} in ${result.elapsed_ms.toFixed(0)} ms`;
    this.pivotButton.disabled = !result.rows.length;
    this.pinButton.disabled = !pinnable(result) || !result.rows.length;
    this.out.replaceChildren(resultTable(result, (t) => this.events.open(t)).root);
  }
}
