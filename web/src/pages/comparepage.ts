// Compare mode (`kinetoscope view BASE --compare NEW`): the verdict of `kinetoscope diff` (with its
// confidence and comparability check) and its waterfall above BASE's and NEW's timelines stacked,
// aligned on one ProfilerStep, zoomed and panned together, beside the delta tables. Ops and kernels
// are coloured by their delta; a waterfall row jumps to its events on both sides; a delta row
// highlights the events of that name on both sides. Every figure comes from `/api/compare` (the
// report of `diff --json`): nothing here decides what changed.
import type { Brief, Meta } from "../lib/api";
import { get } from "../lib/api";
import type { Rgb } from "../lib/color";
import { hslToRgb } from "../lib/color";
import { append, clear, h } from "../lib/dom";
import { formatBytes, formatDuration } from "../lib/format";
import type { Tint } from "../timeline/paint/slices";
import { Timeline } from "../timeline/timeline";

export interface StepSpan { step: number; start_ns: number; end_ns: number; }
export interface CompareSide { label: string; steps: StepSpan[]; }
export type DeltaRow = Record<string, unknown> & { match: string; delta_per_step_ns: number; significant: boolean | null };
export interface Check { check: string; base: unknown; new: unknown; differs: boolean; breaks: boolean; why: string; }
export interface Verdict {
  verdict: "regression" | "improvement" | "neutral" | "inconclusive";
  change_pct: number | null; confidence: number | null; threshold_pct: number;
  base_steps: number; new_steps: number; missing: string[]; reason: string;
}
export interface BehindRow { what: string; name: string; event_name: string; base_ns: number; new_ns: number; delta_ns: number; }
export interface WaterfallPart { part: string; base_ns: number; new_ns: number; delta_ns: number; share_pct: number | null; behind: BehindRow[]; }
export interface Waterfall { total_delta_ns: number | null; base_mean_ns: number | null; new_mean_ns: number | null; parts: WaterfallPart[]; }
export interface CompareReport {
  base: CompareSide; new: CompareSide;
  diff: {
    verdict: Verdict; comparability: { comparable: boolean; checks: Check[] }; waterfall: Waterfall;
    scopes: (Record<string, unknown> & { rank: string | number })[];
  };
}
export interface CompareEvents { step: number; base: Brief | null; new: Brief | null; }

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

const PART_LABELS: Record<string, string> = {
  device_compute: "device compute", exposed_communication: "exposed communication", memory: "memory copies and sets",
  idle_host_bound: "device idle: host-bound", idle_sync: "device idle: sync", idle_launch: "device idle: launch",
  idle_other: "device idle: other", host_only: "host-only time",
};

export function partLabel(part: string): string {
  return PART_LABELS[part] ?? part.replace(/_/g, " ");
}

function signedDuration(ns: number): string {
  return `${ns >= 0 ? "+" : "−"}${formatDuration(Math.abs(ns))}`;
}

/** "REGRESSION: step time +12.30% (confidence 99.90%, 10 vs 10 steps, threshold 2%)"; inconclusive says what is missing. */
export function verdictText(v: Verdict): string {
  const head = v.verdict.toUpperCase();
  if (v.verdict === "inconclusive") return `${head}: ${v.missing.join("; ") || v.reason}`;
  const change = v.change_pct === null ? "" : ` ${v.change_pct >= 0 ? "+" : ""}${v.change_pct.toFixed(2)}%`;
  const confidence = v.confidence === null ? "" : `confidence ${(100 * v.confidence).toFixed(2)}%, `;
  return `${head}: step time${change} (${confidence}${v.base_steps} vs ${v.new_steps} steps, threshold ${v.threshold_pct}%)`;
}

/** "comparable", else what breaks the comparison; then what differs without breaking it. */
export function comparabilityText(c: { comparable: boolean; checks: Check[] }): string {
  const breaks = c.checks.filter((k) => k.breaks).map((k) => k.why);
  const differs = c.checks.filter((k) => k.differs && !k.breaks).map((k) => k.why);
  const head = c.comparable ? "comparable" : `NOT comparable: ${breaks.join("; ")}`;
  return differs.length ? `${head} (differs: ${differs.join("; ")})` : head;
}

/** The parts that moved (most first, as the report orders them) and their sum, which is the change of the mean step. */
export function movedParts(w: Waterfall): { parts: WaterfallPart[]; sum_ns: number } {
  const parts = w.parts.filter((p) => p.delta_ns !== 0 || p.behind.length);
  return { parts, sum_ns: w.parts.reduce((acc, p) => acc + p.delta_ns, 0) };
}

const SLOWER_HUE = 0, FASTER_HUE = 215;
export const UNCHANGED: Rgb = [214, 217, 222];

/** Per event name, a fill by its delta per step: red slower, blue faster, deeper for more of the
 *  largest change; names of no row, or of a row the report finds within the step-to-step noise
 *  (`significant` false), take `UNCHANGED`. Rows are the report's ops and kernels. */
export function deltaTint(rows: DeltaRow[]): Tint {
  const colours = new Map<string, Rgb>();
  const moved = rows.filter((r) => r.delta_per_step_ns !== 0 && r.significant !== false);
  const most = Math.max(0, ...moved.map((r) => Math.abs(r.delta_per_step_ns)));
  for (const row of moved) {
    const share = Math.abs(row.delta_per_step_ns) / most;
    const rgb = hslToRgb(row.delta_per_step_ns > 0 ? SLOWER_HUE : FASTER_HUE, 0.75, 0.85 - 0.4 * share);
    for (const name of rowNames(row)) if (!colours.has(name)) colours.set(name, rgb);  // rows come most impact first
  }
  return { colours, other: UNCHANGED };
}

/** The view showing both events at their offsets from their own step start, on BASE's clock, with a margin. */
export function bothInView(base: Brief | null, baseStep: number, next: Brief | null, newStep: number): [number, number] | null {
  const spans: [number, number][] = [];
  if (base) spans.push([base.ts - baseStep, base.ts + base.dur - baseStep]);
  if (next) spans.push([next.ts - newStep, next.ts + next.dur - newStep]);
  if (!spans.length) return null;
  const lo = Math.min(...spans.map((s) => s[0])), hi = Math.max(...spans.map((s) => s[1]));
  const room = Math.max((hi - lo) * 0.5, 1_000);
  return [baseStep + lo - room, baseStep + hi + room];
}

export class ComparePage {
  readonly root = h("div", { class: "page compare-page" });
  base: Timeline | null = null;
  next: Timeline | null = null;
  report: CompareReport | null = null;
  step = -1;
  jumped: CompareEvents | null = null;
  private syncing = false;
  private table: TableKey = "ops";
  private readonly rows = h("div", { class: "compare-rows" });
  private tint: Tint | null = null;

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
    const scope = report.diff.scopes[0];
    this.tint = deltaTint([...((scope?.ops ?? []) as DeltaRow[]), ...((scope?.kernels ?? []) as DeltaRow[])]);
    const tintToggle = h("input", { type: "checkbox", class: "compare-tint", checked: true, "aria-label": "Colour ops and kernels by their delta",
      onchange: (ev: Event) => this.setTinted((ev.target as HTMLInputElement).checked) });
    const bar = h("div", { class: "toolbar" }, h("span", {}, "align on "), steps.length ? picker : h("span", { class: "muted" }, "no step common to both runs"),
      h("label", { class: "toggle", title: "Red: slower in NEW, blue: faster (deeper: more of the largest change per step); grey: unchanged or within the step-to-step noise" },
        tintToggle, "colour by Δ"),
      h("span", { class: "compare-verdict" }, stepVerdict(scope?.step_time as StepTime | undefined)));
    clear(this.root);
    append(this.root,
      h("div", { class: "compare-timelines" }, this.summary(report), bar,
        h("div", { class: "compare-side", "data-side": "base" }, h("div", { class: "compare-label" }, `BASE: ${report.base.label}`), this.base.root),
        h("div", { class: "compare-side", "data-side": "new" }, h("div", { class: "compare-label" }, `NEW: ${report.new.label}`), this.next.root)),
      h("aside", { class: "compare-deltas" }, h("div", { class: "toolbar" }, tablePicker), this.rows));
    this.renderRows();
    this.setTinted(true);
    if (steps.length) this.alignOn(steps[0]);
  }

  setTinted(on: boolean): void {
    this.base?.setTint(on ? this.tint : null);
    this.next?.setTint(on ? this.tint : null);
  }

  /** The verdict, the comparability check and the waterfall of the report. */
  private summary(report: CompareReport): HTMLElement {
    const { verdict, comparability, waterfall } = report.diff;
    const { parts, sum_ns } = movedParts(waterfall);
    const body = h("tbody");
    for (const part of parts) {
      append(body, h("tr", { class: "clickable part", "data-part": part.part, tabindex: 0, title: "Jump to the first event behind it in the aligned step, on both sides",
        onclick: () => { const top = part.behind[0]; if (top) void this.jump(top.event_name, top.event_name); } },
        h("td", { class: "text" }, partLabel(part.part)), h("td", {}, formatDuration(part.base_ns)), h("td", {}, formatDuration(part.new_ns)),
        h("td", {}, signedDuration(part.delta_ns)), h("td", {}, part.share_pct === null ? "" : `${part.share_pct.toFixed(1)}%`)));
      for (const row of part.behind) {
        append(body, h("tr", { class: "clickable behind", "data-part": part.part, tabindex: 0, title: `${row.what}: ${row.name}`,
          onclick: () => void this.jump(row.event_name, row.event_name) },
          h("td", { class: "text" }, h("span", { class: "muted" }, `${row.what} `), row.name), h("td", {}, formatDuration(row.base_ns)),
          h("td", {}, formatDuration(row.new_ns)), h("td", {}, signedDuration(row.delta_ns)), h("td", {})));
      }
    }
    const total = waterfall.total_delta_ns;
    const table = total === null ? h("p", { class: "muted" }, "No waterfall: a side has no steps.") :
      h("table", { class: "compare-waterfall" },
        h("thead", {}, h("tr", {}, h("th", {}, "part of the mean step"), h("th", {}, "BASE"), h("th", {}, "NEW"), h("th", {}, "Δ"), h("th", {}, "share"))),
        body,
        h("tfoot", {}, h("tr", { class: "total" }, h("td", {}, "step (sum of the parts)"), h("td", {}, formatDuration(waterfall.base_mean_ns ?? 0)),
          h("td", {}, formatDuration(waterfall.new_mean_ns ?? 0)), h("td", {}, signedDuration(sum_ns)), h("td", {}))));
    return h("div", { class: "compare-summary" },
      h("div", { class: `compare-answer verdict-${verdict.verdict}`, title: verdict.reason }, verdictText(verdict)),
      h("div", { class: `compare-comparability${comparability.comparable ? "" : " broken"}` }, comparabilityText(comparability)),
      table);
  }

  /** Shows the first event of `baseName` in BASE's aligned step and of `newName` in NEW's, both in
   *  view at their offsets from the step start, outlined and highlighted with their names. */
  async jump(baseName: string, newName: string): Promise<void> {
    const found = await get<CompareEvents>("/api/compare/events", { base: baseName, new: newName, step: Math.max(this.step, 0) });
    this.jumped = found;
    const view = bothInView(found.base, this.stepStart("base"), found.new, this.stepStart("new"));
    if (view) this.base!.setViewport(view[0], view[1]);
    this.base!.setMatches(found.base ? exactName(baseName) : "");
    this.next!.setMatches(found.new ? exactName(newName) : "");
    for (const [timeline, brief] of [[this.base!, found.base], [this.next!, found.new]] as const) {
      timeline.setSelection(brief, null);
      if (brief) timeline.reveal(brief, false);
    }
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
