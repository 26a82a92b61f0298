// SQL page: a read-only SELECT over the dataset's tables, a results table and a CSV download.
import type { SqlResult } from "./api";
import { post } from "./api";
import { append, clear, h, table } from "./dom";

const EXAMPLE = `SELECT name, count(*) AS calls, sum(dur_ns) / 1e6 AS total_ms
FROM events WHERE layer = 'device'
GROUP BY name ORDER BY total_ms DESC LIMIT 20`;
const TABLES = ["events", "flows", "counters", "allocations", "frames", "sessions", "files", "warnings", "schema"];

export class SqlPage {
  readonly root = h("div", { class: "page sql-page" });
  private readonly editor = h("textarea", { class: "sql-editor", spellcheck: "false", "aria-label": "SQL query" });
  private readonly out = h("div", { class: "sql-out" });
  private readonly csv = h("a", { class: "button", download: "query.csv" }, "Download CSV");

  constructor() {
    this.editor.value = EXAMPLE;
    this.editor.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.run();
      }
    });
    append(this.root, h("p", { class: "muted" }, "Tables: ", ...TABLES.flatMap((t) => [h("code", {}, t), " "]),
      "· one SELECT at a time, read-only, up to 10,000 rows · Ctrl+Enter runs"),
      this.editor, h("div", { class: "toolbar" }, h("button", { class: "primary", onclick: () => void this.run() }, "Run"), this.csv), this.out);
    this.updateCsv();
    this.editor.addEventListener("input", () => this.updateCsv());
  }

  private updateCsv(): void {
    this.csv.setAttribute("href", `/api/sql.csv?q=${encodeURIComponent(this.editor.value)}`);
  }

  async run(): Promise<void> {
    clear(this.out);
    let result: SqlResult;
    try {
      result = await post<SqlResult>("/api/sql", { q: this.editor.value });
    } catch (err) {
      append(this.out, h("p", { class: "error", role: "alert" }, (err as Error).message));
      return;
    }
    append(this.out, h("p", { class: "muted" }, `${result.rows.length} row(s)${result.truncated ? " (truncated)" : ""} in ${result.elapsed_ms.toFixed(0)} ms`),
      table(result.columns, result.rows.map((r) => r.map((c) => (c === null ? "NULL" : String(c))))));
  }
}
