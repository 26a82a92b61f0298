// Compare mode (`kinetoscope view BASE --compare NEW`): BASE's and NEW's timelines stacked, aligned
// on one ProfilerStep, zoomed and panned together, beside the delta table of `kinetoscope diff`.
// Clicking a row highlights the events of that name on both sides.
import type { Meta } from "../lib/api";
import { get } from "../lib/api";
import { append, clear, h } from "../lib/dom";
import { formatBytes, formatDuration } from "../lib/format";
import { Timeline } from "../timeline/timeline";

export interface StepSpan { step: number; start_ns: number; end_ns: number; }
export interface CompareSide { label: string; steps: StepSpan[]; }
export type DeltaRow = Record<string, unknown> & { match: string; delta_per_step_ns: number; significant: boolean | null };
export interface CompareReport {
  base: CompareSide; new: CompareSide;
  diff: { scopes: (Record<string, unknown> & { rank: string | number })[] };
}

type TableKey = "ops" | "kernels" | "op_tree" | "op_shapes" | "modules" | "memory";
const TABLES: [TableKey, string][] = [["ops", "ops by name"], ["kernels", "kernels in their op"], ["op_tree", "ops by place in the tree"],
  ["op_shapes", "ops by shape"], ["modules", "modules (op self time)"], ["memory", "memory snapshots"]];

interface Peak { peak_bytes: number; allocations: number; ranks: number; }
interface StackRow { stack: string; base_bytes_at_peak: number; new_bytes_at_peak: number; delta_bytes: number; }
export interface MemoryDiff { base: Peak; new: Peak; delta_peak_bytes: number; stacks_grew: StackRow[]; stacks_shrank: StackRow[]; stacks_total: number; }

function signedBytes(bytes: number): string {
  return `${bytes >= 0 ? "+" : "−"}${formatBytes(Math.abs(bytes))}`;
}

/** The allocator snapshots of both runs: each side's peak, then the stacks whose bytes at the peak grew, and shrank. */
export function memoryView(memory: MemoryDiff | null | undefined): HTMLElement {
  if (!memory) return h("p", { class: "muted" }, "No memory snapshots on both sides (export_snapshot on each run compares them).");
  const stacks = (title: string, rows: StackRow[]): HTMLElement[] => rows.length ? [h("h4", {}, title),
    h("table", { class: "compare-stacks" }, h("thead", {}, h("tr", {}, h("th", {}, "stack (innermost frames)"), h("th", {}, "BASE"), h("th", {}, "NEW"), h("th", {}, "Δ"))),
      h("tbody", {}, ...rows.map((r) => h("tr", { title: r.stack }, h("td", { class: "text" }, r.stack), h("td", {}, formatBytes(r.base_bytes_at_peak)),
        h("td", {}, formatBytes(r.new_bytes_at_peak)), h("td", {}, signedBytes(r.delta_bytes))))))] : [];
  return h("div", { class: "compare-memory" },
    h("p", {}, `peak ${formatBytes(memory.base.peak_bytes)} → ${formatBytes(memory.new.peak_bytes)} (${signedBytes(memory.delta_peak_bytes)}); `,
      h("span", { class: "muted" }, `${memory.stacks_total} stacks live at either peak`)),
    ...stacks("Grew at the peak", memory.stacks_grew), ...stacks("Shrank at the peak", memory.stacks_shrank));
}
const NEW_API = "/new";

/** Steps present on both sides, in order. */
export function commonSteps(base: StepSpan[], next: StepSpan[]): number[] {
  const there = new Set(next.map((s) => s.step));
  return base.map((s) => s.step).filter((n) => there.has(n));
}

/** The same offsets from `from`'s step start, moved onto `to`'s step start. */
export function aligned(start: number, end: number, from: number, to: number): [number, number] {
  return [to + (start - from), to + (end - from)];
}

/** A search query matching exactly `name` (a `name:/^...$/` regex, its specials escaped). */
export function exactName(name: string): string {
  return `name:/^${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$/`;
}

/** The names a delta row stands for on each side: BASE's name, NEW's (another when replaced); a
 *  module row's is its `nn.Module:` frame. */
export function rowNames(row: DeltaRow): [string, string] {
  const name = String(row.name ?? row.module ?? "");
  return [name, String(row.new_name ?? name)];
}

export interface StepTime { base: { median_ns: number | null }; new: { median_ns: number | null }; delta_pct: number | null; significant: boolean | null; }

/** "median step 12.0 ms → 14.1 ms (+17.50%)", with whether that exceeds the step-to-step spread. */
export function stepVerdict(step: StepTime | undefined): string {
  if (!step || step.base.median_ns === null || step.new.median_ns === null) return "no ProfilerStep on a side: step times not compared";
  const pct = step.delta_pct === null ? "" : ` (${step.delta_pct >= 0 ? "+" : ""}${step.delta_pct.toFixed(2)}%)`;
  const sig = step.significant === null ? ", inconclusive (too few steps to tell)" : step.significant ? ", significant" : ", within the step-to-step variation";
  return `median step ${formatDuration(step.base.median_ns)} → ${formatDuration(step.new.median_ns)}${pct}${sig}`;
}

export class ComparePage {
  readonly root = h("div", { class: "page compare-page" });
  base: Timeline | null = null;
  next: Timeline | null = null;
  report: CompareReport | null = null;
  step = -1;
  private syncing = false;
  private table: TableKey = "ops";
  private readonly rows = h("div", { class: "compare-rows" });

  constructor(private readonly meta: Meta) {
    (window.kinetoscope as unknown as Record<string, unknown>).compare = this;  // for the browser tests
    append(this.root, h("p", { class: "muted" }, "Comparing BASE and NEW (the first time takes a while: the runs are compared)…"));
    this.load().catch((err: unknown) => {
      clear(this.root);
      append(this.root, h("div", { class: "fatal" }, h("h2", {}, "The runs could not be compared"), h("pre", {}, String(err))));
    });
  }

  private async load(): Promise<void> {
    const [report, newMeta] = await Promise.all([get<CompareReport>("/api/compare"), get<Meta>(`${NEW_API}/api/meta`)]);
    this.report = report;
    this.base = new Timeline(this.meta, { select: () => undefined, range: () => undefined, viewChanged: () => this.follow("base") });
    this.next = new Timeline(newMeta, { select: () => undefined, range: () => undefined, viewChanged: () => this.follow("new") }, NEW_API);
    const steps = commonSteps(report.base.steps, report.new.steps);
    const picker = h("select", { class: "compare-step", "aria-label": "Align on step",
      onchange: (ev: Event) => this.alignOn(Number((ev.target as HTMLSelectElement).value)) },
      ...steps.map((n) => h("option", { value: String(n) }, `ProfilerStep#${n}`)));
    const tablePicker = h("select", { class: "compare-table", "aria-label": "Delta table",
      onchange: (ev: Event) => { this.table = (ev.target as HTMLSelectElement).value as TableKey; this.renderRows(); } },
      ...TABLES.map(([k, label]) => h("option", { value: k }, label)));
    const bar = h("div", { class: "toolbar" }, h("span", {}, "align on "), steps.length ? picker : h("span", { class: "muted" }, "no step common to both runs"),
      h("span", { class: "compare-verdict" }, stepVerdict(report.diff.scopes[0]?.step_time as StepTime | undefined)));
    clear(this.root);
    append(this.root,
      h("div", { class: "compare-timelines" }, bar,
        h("div", { class: "compare-side", "data-side": "base" }, h("div", { class: "compare-label" }, `BASE: ${report.base.label}`), this.base.root),
        h("div", { class: "compare-side", "data-side": "new" }, h("div", { class: "compare-label" }, `NEW: ${report.new.label}`), this.next.root)),
      h("aside", { class: "compare-deltas" }, h("div", { class: "toolbar" }, tablePicker), this.rows));
    this.renderRows();
    if (steps.length) this.alignOn(steps[0]);
  }

  private stepStart(side: "base" | "new"): number {
    const found = this.report?.[side].steps.find((s) => s.step === this.step);
    return found ? found.start_ns : 0;
  }

  /** Shows `step` on BASE (with a little room), NEW following on its own step. */
  alignOn(step: number): void {
    this.step = step;
    const span = this.report!.base.steps.find((s) => s.step === step)!;
    const room = (span.end_ns - span.start_ns) * 0.02;
    this.base!.setViewport(span.start_ns - room, span.end_ns + room);
  }

  /** One side moved: the other takes the same offsets from its own step start. */
  private follow(moved: "base" | "new"): void {
    if (this.syncing || !this.base || !this.next) return;
    const [from, to] = moved === "base" ? [this.base, this.next] : [this.next, this.base];
    const [start, end] = aligned(from.vp.start, from.vp.end, this.stepStart(moved), this.stepStart(moved === "base" ? "new" : "base"));
    this.syncing = true;
    try {
      to.setViewport(start, end);
    } finally {
      this.syncing = false;
    }
  }

  private renderRows(): void {
    clear(this.rows);
    const scope = this.report?.diff.scopes[0];
    if (this.table === "memory") {
      append(this.rows, memoryView(scope?.memory as MemoryDiff | null | undefined));
      return;
    }
    const rows = (scope?.[this.table] ?? []) as DeltaRow[];
    const body = h("tbody");
    rows.forEach((row, i) => {
      const [old, now] = rowNames(row);
      const label = old === now ? old : `${old} → ${now}`;
      const where = this.table === "op_tree" && row.parent ? `${String(row.parent)} / ` : this.table === "kernels" && row.op ? `${String(row.op)} / ` : "";
      const sig = row.significant === null ? "?" : row.significant ? "yes" : "no";
      const delta = `${row.delta_per_step_ns >= 0 ? "+" : "−"}${formatDuration(Math.abs(row.delta_per_step_ns))}`;
      append(body, h("tr", { class: "clickable", "data-row": String(i), tabindex: 0, title: where + label,
        onclick: (ev: Event) => this.pick(row, ev.currentTarget as HTMLElement) },
        h("td", {}, row.match), h("td", { class: "text" }, where ? h("span", { class: "muted" }, where) : null, label),
        h("td", {}, delta), h("td", {}, sig)));
    });
    append(this.rows, h("p", { class: "muted" }, "Per step, most impact first; click a row to highlight its events on both sides."),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "match"), h("th", {}, "name"), h("th", {}, "Δ / step"), h("th", {}, "sig"))), body));
  }

  /** Highlights BASE's events of the row's name and NEW's of its counterpart. */
  pick(row: DeltaRow, tr: HTMLElement): void {
    for (const other of this.rows.querySelectorAll("tr.picked")) other.classList.remove("picked");
    tr.classList.add("picked");
    const [old, now] = rowNames(row);
    if (row.match !== "new") this.base?.setMatches(exactName(old)); else this.base?.setMatches("");
    if (row.match !== "gone") this.next?.setMatches(exactName(now)); else this.next?.setMatches("");
  }
}
