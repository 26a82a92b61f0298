// A virtualized table: any number of rows, only the ones in view (and a few around) in the DOM,
// redrawn on scroll at most once a frame; a click on a header sorts by that column. A scroll keeps
// the rows still in view as they are and rewrites only the cells of the rows that come into view
// (the text nodes of a cell are kept, their text replaced): a scroll frame lays out and paints a
// screenful of rows and a few around, no more.
import { h } from "../lib/dom";

export const ROW_PX = 22;
const OVERSCAN_ROWS = 4;
const FALLBACK_VIEW_PX = 600; // before the table is laid out (not yet in the page)

export type Cell = unknown;
export interface VirtualTableOptions {
  /** A row's text in column `c` (default: NULL for null, else String). */
  format?: (cell: Cell, column: number) => string;
  /** A click or Enter on row `i` (an index into the rows given, whatever the sort). */
  onRow?: (i: number) => void;
  /** Columns cut with an ellipsis, full text on hover (names, tracks). */
  textColumns?: Set<number>;
}

/** Rows `first`..`last` (exclusive) to draw for a scroll offset, a view height and a row count. */
export function visibleRange(scrollPx: number, viewPx: number, count: number, rowPx = ROW_PX): [number, number] {
  const first = Math.max(0, Math.min(Math.floor(scrollPx / rowPx), count - 1) - OVERSCAN_ROWS);
  const last = Math.min(count, Math.ceil((scrollPx + viewPx) / rowPx) + OVERSCAN_ROWS);
  return [first, Math.max(first, last)];
}

/** The order of `rows` sorted by column `c` (numbers as numbers, then text), stable; `dir` 1 or -1. */
export function sortOrder(rows: readonly (readonly Cell[])[], c: number, dir: 1 | -1): number[] {
  const order = rows.map((_, i) => i);
  const key = (v: Cell): number | string => (typeof v === "number" ? v : v === null || v === undefined ? -Infinity
    : typeof v === "bigint" ? Number(v) : typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : String(v));
  const keys = rows.map((r) => key(r[c]));
  order.sort((a, b) => {
    const x = keys[a], y = keys[b];
    const cmp = typeof x === "number" && typeof y === "number" ? x - y
      : typeof x === "number" ? -1 : typeof y === "number" ? 1 : x < y ? -1 : x > y ? 1 : 0;
    return cmp * dir || a - b;
  });
  return order;
}

const SAMPLE_ROWS = 200;

/** The rows whose text sets the columns' widths: the first ones, others spread evenly over the
 * whole result, and in each column of numbers the rows of its smallest and largest value (the
 * widest numbers), so that a long value after the first rows is not cut, a number least of all. */
export function widthSample(rows: readonly (readonly Cell[])[]): (readonly Cell[])[] {
  const picked = new Set<number>();
  for (let i = 0; i < Math.min(rows.length, SAMPLE_ROWS); i++) picked.add(i);
  const stride = Math.ceil(rows.length / SAMPLE_ROWS);
  for (let i = 0; i < rows.length; i += stride) picked.add(i);
  const columns = rows[0]?.length ?? 0;
  for (let c = 0; c < columns; c++) {
    let low = -1, high = -1;
    for (let i = 0; i < rows.length; i++) {
      const v = rows[i][c];
      if (typeof v !== "number" && typeof v !== "bigint") continue;
      if (low < 0 || v < (rows[low][c] as number)) low = i;
      if (high < 0 || v > (rows[high][c] as number)) high = i;
    }
    if (low >= 0) picked.add(low).add(high);
  }
  return [...picked].map((i) => rows[i]);
}
const CHAR_PX = 7;
const CELL_PAD_PX = 18;

/** Each column's width in px: its longest text among the header and `sample` (in characters), within 48-560 px. */
export function columnWidths(columns: string[], sample: readonly (readonly Cell[])[], format: (cell: Cell, column: number) => string): number[] {
  return columns.map((name, c) => {
    let chars = name.length + 2; // the sort arrow
    for (const row of sample) chars = Math.max(chars, format(row[c], c).length);
    return Math.min(Math.max(chars * CHAR_PX + CELL_PAD_PX, 48), 560);
  });
}

const defaultFormat = (cell: Cell): string => (cell === null || cell === undefined ? "NULL"
  : typeof cell === "object" ? JSON.stringify(cell) : String(cell));

export class VirtualTable {
  readonly root = h("div", { class: "vtable", tabindex: -1 });
  private readonly body = h("tbody");
  private readonly grid = h("table", { class: "grid vgrid" });
  private readonly sizer = h("div", { class: "vsizer" });
  private readonly head = h("tr");
  private order: number[];
  private sortColumn = -1;
  private sortDir: 1 | -1 = 1;
  private drawn: [number, number] = [-1, -1];
  private frame = 0;
  private current = -1;
  private shownFrom = 0; // the position (in the order) of the body's first row
  private readonly spare: HTMLTableRowElement[] = []; // rows out of the page, kept for reuse
  /** Each row element's text nodes (one a cell) and the row it shows. */
  private readonly texts = new WeakMap<HTMLTableRowElement, Text[]>();
  private readonly rowOf = new WeakMap<HTMLTableRowElement, number>();
  private readonly columnCount: number;

  constructor(columns: string[], private readonly rows: readonly (readonly Cell[])[],
    private readonly options: VirtualTableOptions = {}) {
    this.order = rows.map((_, i) => i);
    this.columnCount = columns.length;
    columns.forEach((name, c) => this.head.appendChild(h("th", { title: "Click to sort", onclick: () => this.sort(c) }, name)));
    // fixed column widths from the header and the first rows: a cheap layout per frame, no jitter on scroll
    const widths = columnWidths(columns, widthSample(rows), options.format ?? defaultFormat);
    const cols = h("colgroup", {}, ...widths.map((w) => { const col = h("col"); col.style.width = `${w}px`; return col; }));
    this.grid.style.width = `${widths.reduce((a, b) => a + b, 0)}px`;
    this.grid.append(cols, h("thead", {}, this.head), this.body);
    this.sizer.style.height = `${(rows.length + 1) * ROW_PX}px`; // the rows and the header: the scroll range
    this.sizer.appendChild(this.grid);
    this.root.appendChild(this.sizer);
    this.root.addEventListener("scroll", () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(this.root);
    this.wireRows();
    this.render();
  }

  get rowCount(): number {
    return this.rows.length;
  }

  /** Sorts by column `c`; again on the same column reverses the order. */
  sort(c: number): void {
    this.sortDir = this.sortColumn === c ? (this.sortDir === 1 ? -1 : 1) : (typeof this.rows[0]?.[c] === "number" ? -1 : 1);
    this.sortColumn = c;
    this.order = sortOrder(this.rows, c, this.sortDir);
    this.head.querySelectorAll("th").forEach((th, i) => th.setAttribute("aria-sort", i !== c ? "none" : this.sortDir === 1 ? "ascending" : "descending"));
    this.drawn = [-1, -1];
    this.render();
  }

  /** Scrolls row `i` (an index into the rows given) into view and marks it current. */
  reveal(i: number): void {
    this.current = i;
    const at = this.order.indexOf(i);
    if (at < 0) return;
    const view = this.root.clientHeight || FALLBACK_VIEW_PX;
    const top = at * ROW_PX;
    if (top < this.root.scrollTop || top + ROW_PX > this.root.scrollTop + view - ROW_PX) this.root.scrollTop = Math.max(0, top - view / 2);
    this.drawn = [-1, -1];
    this.render();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
  }

  private render(): void {
    const [first, last] = visibleRange(this.root.scrollTop, this.root.clientHeight || FALLBACK_VIEW_PX, this.rows.length);
    if (first === this.drawn[0] && last === this.drawn[1]) return;
    this.drawn = [first, last];
    this.grid.style.marginTop = `${first * ROW_PX}px`; // the rows above, not in the DOM (a margin, not a transform: the header sticks)
    this.placeRows(first, last);
    this.shownFrom = first;
    const format = this.options.format ?? defaultFormat;
    const textColumns = this.options.textColumns;
    const trs = this.body.children as HTMLCollectionOf<HTMLTableRowElement>;
    for (let k = 0; k < trs.length; k++) {
      const i = this.order[first + k];
      const tr = trs[k];
      tr.classList.toggle("current", i === this.current);
      if (this.rowOf.get(tr) === i) continue; // a row still in view: nothing to write
      this.rowOf.set(tr, i);
      tr.dataset.row = String(i);
      const row = this.rows[i];
      const texts = this.texts.get(tr)!;
      for (let c = 0; c < texts.length; c++) {
        const text = format(row[c], c);
        const node = texts[c];
        if (node.data === text) continue;
        node.data = text;
        if (textColumns?.has(c)) (node.parentNode as HTMLElement).title = text;
      }
    }
  }

  /** Puts `last - first` row elements in the body: those already showing a position in the range stay
   * in place, those scrolled out go to the other end (or, with none in common, rows stay where they are). */
  private placeRows(first: number, last: number): void {
    const body = this.body;
    const shown = body.children.length;
    const keptFrom = Math.max(first, this.shownFrom), keptTo = Math.min(last, this.shownFrom + shown);
    if (keptFrom >= keptTo) {
      while (body.children.length > last - first) this.spare.push(this.detach(body.lastElementChild as HTMLTableRowElement));
      while (body.children.length < last - first) body.appendChild(this.spare.pop() ?? this.newRow());
      return;
    }
    for (let p = this.shownFrom; p < keptFrom; p++) this.spare.push(this.detach(body.firstElementChild as HTMLTableRowElement));
    for (let p = keptTo; p < this.shownFrom + shown; p++) this.spare.push(this.detach(body.lastElementChild as HTMLTableRowElement));
    for (let p = keptFrom - 1; p >= first; p--) body.insertBefore(this.spare.pop() ?? this.newRow(), body.firstChild);
    for (let p = keptTo; p < last; p++) body.appendChild(this.spare.pop() ?? this.newRow());
  }

  private detach(tr: HTMLTableRowElement): HTMLTableRowElement {
    tr.remove();
    return tr;
  }

  private newRow(): HTMLTableRowElement {
    const tr = h("tr", this.options.onRow ? { class: "clickable", tabindex: 0 } : {});
    const texts: Text[] = [];
    for (let c = 0; c < this.columnCount; c++) {
      const text = document.createTextNode("");
      texts.push(text);
      tr.appendChild(h("td", this.options.textColumns?.has(c) ? { class: "text" } : {}, text));
    }
    this.texts.set(tr, texts);
    return tr;
  }

  /** One click and one Enter listener for every row (rows are reused as the table scrolls). */
  private wireRows(): void {
    const open = this.options.onRow;
    if (!open) return;
    const rowOf = (ev: Event) => (ev.target as HTMLElement).closest<HTMLElement>("tr[data-row]");
    this.body.addEventListener("click", (ev) => { const tr = rowOf(ev); if (tr) open(Number(tr.dataset.row)); });
    this.body.addEventListener("keydown", (ev) => { const tr = rowOf(ev); if (tr && ev.key === "Enter") open(Number(tr.dataset.row)); });
  }
}
