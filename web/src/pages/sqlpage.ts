// SQL page: a read-only SELECT over the dataset's tables, a schema browser, results whose rows open
// the timeline (an `id` column: that event; else a `ts_ns` column: that time), a CSV download,
// and the query kept in the deep link.
import type { EventId, SqlResult } from "../lib/api";
import { parseEventId } from "../lib/ids";
import { authHeaders, post, startSqlWorker } from "../lib/api";
import { append, clear, h } from "../lib/dom";
import type { RowTarget } from "../lib/rowlinks";
import { VirtualTable } from "../widgets/vtable";

const EXAMPLE = `SELECT name, count(*) AS calls, sum(dur_ns) / 1e6 AS total_ms
FROM events WHERE layer = 'device'
GROUP BY name ORDER BY total_ms DESC LIMIT 20`;
const SCHEMA_QUERY = `SELECT "table", "column", "type", "unit", "description" FROM schema`;

export interface SqlPageEvents {
  /** The query that ran, for the deep link. */
  ran(query: string): void;
  openEvent(id: EventId): void;
  /** Open the timeline at an absolute time (epoch ns, as DuckDB returns it). */
  openTime(tsNs: number): void;
}

export interface SchemaColumn { table: string; column: string; type: string; unit: string; description: string; }

/** Columns grouped by table, in the schema table's order. */
export function schemaTables(rows: unknown[][]): Map<string, SchemaColumn[]> {
  const tables = new Map<string, SchemaColumn[]>();
  for (const [t, c, type, unit, description] of rows.map((r) => r.map((v) => String(v ?? "")))) {
    if (!tables.has(t)) tables.set(t, []);
    tables.get(t)!.push({ table: t, column: c, type, unit, description });
  }
  return tables;
}

/** What a result row opens: the event of its `id` column, else the time of its `ts_ns` column. */
export function rowTarget(columns: string[], row: readonly unknown[]): { id: EventId } | { ts: number } | null {
  const cellOf = (name: string) => {
    const at = columns.indexOf(name);
    return at >= 0 ? row[at] : null;
  };
  const number = (name: string) => {
    const cell = cellOf(name);
    const value = cell === null || cell === "" || typeof cell === "boolean" ? NaN : Number(cell);
    return Number.isFinite(value) ? value : null;
  };
  const id = cellOf("id");
  // an id as the query gave it: a number up to 2^53, a string beyond (never through Number)
  if ((typeof id === "number" && Number.isSafeInteger(id)) || typeof id === "string") {
    const text = parseEventId(String(id));
    if (text !== undefined) return { id: text };
  }
  const ts = number("ts_ns");
  return ts !== null ? { ts } : null;
}

export class SqlPage {
  readonly root = h("div", { class: "page sql-page" });
  private readonly editor = h("textarea", { class: "sql-editor", spellcheck: "false", "aria-label": "SQL query" });
  private readonly out = h("div", { class: "sql-out" });
  private readonly schema = h("div", { class: "schema-browser", "aria-label": "Tables and columns" });
  private readonly csv = h("a", { class: "button", download: "query.csv" }, "Download CSV");

  constructor(private readonly events: SqlPageEvents, query?: string) {
    this.editor.value = query || EXAMPLE;
    this.editor.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.run();
      }
    });
    const work = h("div", { class: "sql-work" },
      h("p", { class: "muted" }, "One SELECT at a time, read-only, up to 10,000 rows · Ctrl+Enter runs · a row with an id or ts_ns opens the timeline there"),
      this.editor, h("div", { class: "toolbar" }, h("button", { class: "primary", onclick: () => void this.run() }, "Run"), this.csv), this.out);
    append(this.root, h("div", { class: "sql-layout" }, this.schema, work));
    this.updateCsv();
    this.editor.addEventListener("input", () => this.updateCsv());
    this.csv.addEventListener("click", (event) => { event.preventDefault(); void this.downloadCsv(); });
    void this.loadSchema();
    if (query) void this.run();
    else startSqlWorker();
  }

  private updateCsv(): void {
    this.csv.setAttribute("href", `/api/sql.csv?q=${encodeURIComponent(this.editor.value)}`);
  }

  /** The CSV through fetch (the request needs this page's session header), saved from a blob. */
  private async downloadCsv(): Promise<void> {
    const response = await fetch(this.csv.getAttribute("href") ?? "", { headers: authHeaders(), credentials: "omit" });
    if (!response.ok) {
      clear(this.out);
      append(this.out, h("div", { class: "error" }, await response.text()));
      return;
    }
    const url = URL.createObjectURL(await response.blob());
    const save = h("a", { href: url, download: "query.csv" });
    save.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  private async loadSchema(): Promise<void> {
    let result: SqlResult;
    try {
      result = await post<SqlResult>("/api/sql", { q: SCHEMA_QUERY });
    } catch (err) {
      append(this.schema, h("p", { class: "error" }, `schema: ${(err as Error).message}`));
      return;
    }
    append(this.schema, h("h4", {}, "Tables"));
    for (const [name, columns] of schemaTables(result.rows)) {
      const list = h("ul", { class: "schema-columns" }, ...columns.map((c) => h("li", {},
        h("button", { class: "link", title: `${c.type}${c.unit ? ` · ${c.unit}` : ""} — ${c.description}`,
          onclick: () => this.insert(`"${c.column}"`) }, c.column), h("span", { class: "muted" }, ` ${c.type}`))));
      const details = h("details", { "data-table": name },
        h("summary", {}, h("button", { class: "link", title: `insert FROM ${name}`, onclick: (ev: Event) => { ev.preventDefault(); this.insert(`FROM ${name}`); } }, name),
          h("span", { class: "muted" }, ` ${columns.length}`)), list);
      append(this.schema, details);
    }
  }

  /** ``text`` at the editor's cursor, with a space on either side where needed. */
  private insert(text: string): void {
    const { selectionStart: a, selectionEnd: b, value } = this.editor;
    const before = a > 0 && !/\s|\(|,/.test(value[a - 1]) ? " " : "";
    this.editor.setRangeText(before + text + " ", a, b, "end");
    this.editor.focus();
    this.updateCsv();
  }

  async run(): Promise<void> {
    clear(this.out);
    const query = this.editor.value;
    this.events.ran(query);
    let result: SqlResult;
    try {
      result = await post<SqlResult>("/api/sql", { q: query });
    } catch (err) {
      append(this.out, h("p", { class: "error", role: "alert" }, (err as Error).message));
      return;
    }
    const open = (target: RowTarget) => {
      if ("id" in target) this.events.openEvent(target.id);
      else this.events.openTime(target.ts);
    };
    append(this.out, h("p", { class: "muted" }, `${result.rows.length} row(s)${result.truncated ? " (truncated)" : ""} in ${result.elapsed_ms.toFixed(0)} ms`),
      resultTable(result, open).root);
  }
}

/** A result as a virtualized table (only the rows in view are in the page); rows with a target open it. */
export function resultTable(result: SqlResult, open: (t: RowTarget) => void): VirtualTable {
  const textColumns = new Set(result.columns.flatMap((c, i) => (["name", "track", "file"].includes(c) ? [i] : [])));
  const opens = result.columns.includes("id") || result.columns.includes("ts_ns");
  return new VirtualTable(result.columns, result.rows, {
    textColumns,
    onRow: opens ? (i) => { const t = rowTarget(result.columns, result.rows[i]); if (t) open(t); } : undefined,
  });
}
