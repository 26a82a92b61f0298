// The allocator segment view (Memory page): the caching allocator's segments in address order, each
// a strip of its blocks by state, at the snapshot or at an earlier time picked on the slider or the
// reserved/active chart above it (the server rebuilds that state from the snapshot's trace).
import { get } from "../lib/api";
import { append, clear, h, sizedContext } from "../lib/dom";
import { formatBytes, formatCount, formatDuration } from "../lib/format";
import type { Geometry, RowGeom, Seg, SegBlock, SegTotals } from "./seglayout";
import { blockAt, hexAddr, segmentRows, STATE_LABEL, summaryText } from "./seglayout";
import { canvasColors } from "../lib/theme";

export interface SegmentSource { run: string; rank: number; session: string; snapshot: string; device: number; segments: number; reserved_bytes: number; }
interface History { first_ns: number | null; last_ns: number | null; entries: number; complete: boolean; note: string; }
interface TraceEntry { seq: number; action: string; addr: number | string; size: number; stream: number; ts_ns: number; }
interface SegmentState {
  last_entry: TraceEntry | null; prev_ns: number | null; next_ns: number | null;
  found: boolean; note?: string; at_ns: number | null; history: History; undone: number; mismatches: number; unplaced: number;
  totals: SegTotals; series: { ts: number[]; reserved: number[]; active: number[] }; stacks: string[]; segments: Seg[];
}

const FILL: Record<string, string> = { active_allocated: "#2563eb", active_pending_free: "#dc2626", inactive: "rgba(148,163,184,0.35)" };
const SLACK = "#93c5fd"; // the part of an allocated block beyond what was requested (rounding)
const GEOM: Geometry = { rowHeight: 20, labelWidth: 230, stripWidth: 600 };

/** A rank and device to open at a time (from a shift-click on the allocator chart). */
export interface SegmentFocus { run: string; rank: number; device: number; at: number; }

export async function segmentView(box: HTMLElement, focus?: SegmentFocus): Promise<void> {
  const sources = await get<SegmentSource[]>("/api/memory/segment_sources");
  if (!sources.length) {
    append(box, h("p", { class: "empty" }, "No allocator segments in this dataset: they come from a CUDA memory snapshot " +
      "(torch.cuda.memory._snapshot(), or Profiler.export_snapshot on a device run) with its segments and blocks."));
    return;
  }
  const pick = h("select", { "aria-label": "Segments of" }, ...sources.map((s, i) => h("option", { value: i },
    `rank ${s.rank} · ${s.device < 0 ? "host (CPU)" : `device ${s.device}`} · ${s.snapshot} (${formatCount(s.segments)} segments, ${formatBytes(s.reserved_bytes)})`)));
  const out = h("div", { class: "segments-out" });
  pick.addEventListener("change", () => void new SegmentPanel(out, sources[Number(pick.value)]).load(null));
  append(box, h("div", { class: "toolbar" }, pick), out);
  const asked = focus ? sources.findIndex((s) => s.run === focus.run && s.rank === focus.rank && s.device === focus.device) : -1;
  pick.value = String(Math.max(asked, 0));
  await new SegmentPanel(out, sources[Math.max(asked, 0)]).load(asked >= 0 ? focus!.at : null);
}

/** How far from the run's start a snapshot's history may begin and still be read on the run's clock. */
export const FAR_CLOCK_NS = 3600e9;

/** Whether a history starting at `firstNs` (from the run start) was recorded on another clock. */
export function farClock(firstNs: number | null): boolean {
  return firstNs !== null && Math.abs(firstNs) > FAR_CLOCK_NS;
}

/** A long span in hours, days or years ("38.5 days"), for clocks that disagree by that much. */
export function roughSpan(ns: number): string {
  const hours = ns / 3600e9;
  const days = hours / 24;
  return days >= 730 ? `${(days / 365.25).toFixed(0)} years` : hours >= 48 ? `${days.toFixed(1)} days` : `${hours.toFixed(1)} hours`;
}

/** The API's bound on a time parameter (PARAM_LIMIT in viewer/serving/app.py, about 146 years). */
export const API_TIME_LIMIT_NS = 2 ** 62;

/** Whether the times of a history (from the run start) can be asked for: within the API's bound. */
export function steppable(firstNs: number | null, lastNs: number | null): boolean {
  return firstNs !== null && lastNs !== null && Math.abs(firstNs) <= API_TIME_LIMIT_NS && Math.abs(lastNs) <= API_TIME_LIMIT_NS;
}

class SegmentPanel {
  private state: SegmentState | null = null;
  private readonly slider = h("input", { type: "range", class: "seg-time", "aria-label": "State at" });
  private readonly readout = h("span", { class: "seg-at" });
  private readonly prev = h("button", { class: "seg-prev", title: "the state one trace entry earlier" }, "◀ entry");
  private readonly next = h("button", { class: "seg-next", title: "the state one trace entry later" }, "entry ▶");
  private readonly entry = h("p", { class: "muted seg-entry" });
  private readonly summary = h("p", { class: "seg-summary" });
  private readonly notes = h("div", { class: "seg-notes" });
  private readonly chart = h("canvas", { class: "seg-history", height: 80 });
  private readonly canvas = h("canvas", { class: "seg-canvas" });
  private readonly tip = h("div", { class: "tooltip", hidden: true });
  private readonly toScale = h("input", { type: "checkbox", checked: true, class: "seg-scale" });
  private rows: RowGeom[] = [];
  private loading = 0;

  constructor(private readonly box: HTMLElement, private readonly source: SegmentSource) {
    clear(box);
    const latest = h("button", { class: "seg-latest", onclick: () => void this.load(null) }, "At the snapshot");
    append(box, h("div", { class: "toolbar seg-controls" }, h("label", {}, "state at ", this.slider), this.prev, this.next,
      this.readout, latest, h("label", {}, this.toScale, " widths to scale")),
    this.chart, this.entry, this.summary, this.notes,
    h("p", { class: "muted" }, "One row per segment in address order: ", legend("active_allocated", "allocated"), " ",
      legend("active_pending_free", "pending free"), " ", legend("inactive", "cached free"),
      "; the light end of an allocated block is rounding beyond the requested size. Hover: block size, requested size and stack."),
    h("div", { class: "seg-scroll" }, this.canvas), this.tip);
    this.slider.addEventListener("change", () => { if (!this.slider.disabled) void this.load(Number(this.slider.value)); });
    this.slider.addEventListener("input", () => { if (!this.slider.disabled) this.readout.textContent = this.timeText(Number(this.slider.value)); });
    this.toScale.addEventListener("change", () => this.draw());
    this.prev.addEventListener("click", () => { if (this.state?.prev_ns != null) void this.load(this.state.prev_ns); });
    this.next.addEventListener("click", () => { if (this.state?.next_ns != null) void this.load(this.state.next_ns); });
    this.chart.addEventListener("click", (ev) => {
      const t = this.chartTime(ev.clientX - this.chart.getBoundingClientRect().left);
      if (t !== null) void this.load(t);
    });
    this.canvas.addEventListener("mousemove", (ev) => this.hover(ev));
    this.canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; });
    new ResizeObserver(() => this.draw()).observe(this.canvas);
  }

  async load(wanted: number | null): Promise<void> {
    const at = wanted === null ? null : Math.round(wanted);
    const s = this.source;
    const ticket = ++this.loading;
    const params: Record<string, string | number> = { run: s.run, rank: s.rank, device: s.device, snapshot: s.snapshot, session: s.session };
    if (at !== null) {
      if (Math.abs(at) > API_TIME_LIMIT_NS) return; // a history beyond the API's bound: its slider is off
      params.at_ns = at;
    }
    let state: SegmentState;
    try {
      state = await get<SegmentState>("/api/memory/segments", params);
    } catch (err) {
      if (ticket === this.loading) this.notes.replaceChildren(h("p", { class: "error seg-error", role: "alert" }, (err as Error).message));
      return;
    }
    if (ticket !== this.loading) return; // a later pick is on its way
    this.state = state;
    const h0 = state.history;
    const steps = steppable(h0.first_ns, h0.last_ns);
    if (steps) {
      this.slider.min = String(h0.first_ns! - 1000);
      this.slider.max = String(h0.last_ns);
      this.slider.step = "1000";
      this.slider.value = String(at ?? h0.last_ns);
    }
    this.slider.disabled = !steps;
    this.box.dataset.at = at === null ? "snapshot" : String(at);
    this.readout.textContent = this.timeText(at);
    this.summary.textContent = summaryText(state.totals);
    this.prev.disabled = !steps || state.prev_ns === null;
    this.next.disabled = !steps || state.next_ns === null;
    const e = state.last_entry;
    this.entry.textContent = e
      ? `last entry: #${formatCount(e.seq)} ${e.action} ${formatBytes(e.size)} at ${hexAddr(e.addr)} (stream ${e.stream}) at ${this.when(e.ts_ns)}`
      : state.history.entries ? "before the first trace entry" : "";
    const notes: string[] = [];
    if (h0.note) notes.push(h0.note);
    if (farClock(h0.first_ns)) {
      notes.push(`This snapshot's clock is far from the trace's (its history starts ${roughSpan(Math.abs(h0.first_ns!))} ` +
        `${h0.first_ns! < 0 ? "before" : "after"} the run's start, as recorded): times here count from its first entry.` +
        (steps ? "" : " That is too far to step through its history: only its state at the snapshot is shown."));
    }
    if (!h0.entries) notes.push("This snapshot has no trace entries (memory history was not recorded while it ran): only its state at export is known.");
    this.chart.style.display = h0.entries ? "" : "none";
    if (state.mismatches || state.unplaced) {
      notes.push(`${formatCount(state.mismatches)} trace entr${state.mismatches === 1 ? "y" : "ies"} found nothing to undo and ` +
        `${formatCount(state.unplaced)} block(s) fall in no segment: this state is approximate (the trace and the snapshot disagree).`);
    }
    if (state.undone) notes.push(`Rebuilt by undoing the ${formatCount(state.undone)} trace entries after this time; blocks freed later show their requested size (the trace does not record the rounded one).`);
    this.notes.replaceChildren(...notes.map((n, i) => h("p", { class: i === 0 && !h0.complete ? "warn seg-incomplete" : "muted" }, n)));
    this.draw();
  }

  private timeText(at: number | null): string {
    const h0 = this.state?.history;
    if (at === null || !h0 || h0.last_ns === null || at >= h0.last_ns) return "at the snapshot (after the last trace entry)";
    return `at ${this.when(at)} (${formatDuration(h0.last_ns - at)} before the snapshot)`;
  }

  /** A time of the history: from the run start, or from the history's first entry when the
   *  snapshot's clock is far from the trace's (a snapshot recorded on another day). */
  private when(ns: number): string {
    const first = this.state?.history.first_ns ?? null;
    return farClock(first) ? `${formatDuration(ns - first!)} into its history` : formatDuration(ns);
  }

  private chartX(t: number): number {
    const h0 = this.state!.history;
    const w = this.chart.clientWidth || 800;
    return 60 + ((t - h0.first_ns!) / Math.max(h0.last_ns! - h0.first_ns!, 1)) * (w - 70);
  }

  private chartTime(px: number): number | null {
    const h0 = this.state?.history;
    if (!h0 || h0.first_ns === null || h0.last_ns === null) return null;
    const w = this.chart.clientWidth || 800;
    const f = Math.min(Math.max((px - 60) / (w - 70), 0), 1);
    return h0.first_ns + f * (h0.last_ns - h0.first_ns);
  }

  private draw(): void {
    if (!this.state) return;
    this.drawChart();
    const state = this.state;
    const width = this.canvas.clientWidth || 900;
    const g = this.geometry(width);
    this.rows = segmentRows(state.segments, g, this.toScale.checked);
    const height = Math.max(state.segments.length * g.rowHeight, 20);
    const ctx = sizedContext(this.canvas, width, height);
    ctx.font = "11px system-ui, sans-serif";
    const colors = canvasColors();
    state.segments.forEach((seg, i) => {
      const row = this.rows[i];
      const pad = g.rowHeight >= 14 ? 2 : 0;
      const y = row.top + pad;
      const hgt = g.rowHeight - (pad ? 2 * pad : 1);
      const labelled = g.rowHeight >= 14;
      ctx.fillStyle = colors.axisText;
      if (labelled) ctx.fillText(`${hexAddr(seg.addr)} ${formatBytes(seg.size)} · s${seg.stream}${seg.type ? ` · ${seg.type}` : ""}`, 4, y + hgt - 3);
      for (const b of seg.blocks) drawBlock(ctx, b, seg, row, y, hgt);
      ctx.strokeStyle = colors.outline;
      if (labelled) ctx.strokeRect(row.left + 0.5, y + 0.5, row.width - 1, hgt - 1);
      ctx.fillStyle = colors.axisText;
      if (labelled) ctx.fillText(`largest free ${formatBytes(seg.largest_free_bytes)}`, row.left + row.width + 6, y + hgt - 3);
    });
    this.canvas.dataset.segments = String(state.segments.length);
  }

  /** Rows 20 px tall, thinner for thousands of segments (a canvas is at most about 32,000 px tall). */
  private geometry(width: number): Geometry {
    const n = this.state?.segments.length ?? 0;
    return { ...GEOM, rowHeight: Math.max(4, Math.min(GEOM.rowHeight, Math.floor(30_000 / Math.max(n, 1)))),
      stripWidth: Math.max(width - GEOM.labelWidth - 150, 100) };
  }

  private drawChart(): void {
    const state = this.state!;
    const { ts, reserved, active } = state.series;
    const w = this.chart.clientWidth || 800;
    const hgt = 80;
    const ctx = sizedContext(this.chart, w, hgt);
    ctx.font = "11px system-ui, sans-serif";
    if (!ts.length || state.history.first_ns === null) return;
    const peak = Math.max(1, ...reserved);
    const y = (b: number) => hgt - 4 - (b / peak) * (hgt - 14);
    for (const [values, color] of [[reserved, "rgba(148,163,184,0.6)"], [active, "rgba(37,99,235,0.75)"]] as const) {
      ctx.fillStyle = color;
      for (let i = 0; i < ts.length; i++) {
        const x0 = this.chartX(ts[i]);
        const x1 = i + 1 < ts.length ? this.chartX(ts[i + 1]) : this.chartX(state.history.last_ns!);
        ctx.fillRect(x0, y(values[i]), Math.max(x1 - x0, 1), hgt - 4 - y(values[i]));
      }
    }
    const colors = canvasColors();
    ctx.fillStyle = colors.axisText;
    ctx.fillText(formatBytes(peak), 2, 12);
    ctx.fillText("reserved", 2, 26);
    ctx.fillStyle = "#2563eb";
    ctx.fillText("active", 2, 40);
    const at = state.at_ns ?? state.history.last_ns!;
    ctx.fillStyle = "#b91c1c";
    ctx.fillRect(Math.min(Math.max(this.chartX(at), 60), w - 10) - 1, 0, 2, hgt);
  }

  private hover(ev: MouseEvent): void {
    const state = this.state;
    if (!state) return;
    const rect = this.canvas.getBoundingClientRect();
    const g = this.geometry(this.canvas.clientWidth || 900);
    const hit = blockAt(state.segments, this.rows, g, ev.clientX - rect.left, ev.clientY - rect.top);
    if (!hit) {
      this.tip.hidden = true;
      return;
    }
    clear(this.tip);
    const { seg, block } = hit;
    if (block) append(this.tip, ...blockLines(block, state.stacks));
    append(this.tip, h("div", { class: "muted" }, `segment ${hexAddr(seg.addr)}: ${formatBytes(seg.size)}, stream ${seg.stream}, pool ${seg.pool || "?"}${seg.expandable ? ", expandable" : ""}; ` +
      `allocated ${formatBytes(seg.allocated_bytes)}, cached free ${formatBytes(seg.free_bytes)} in ${seg.free_blocks} block(s), largest ${formatBytes(seg.largest_free_bytes)}`));
    if (!block && seg.stack >= 0) {
      append(this.tip, h("div", {}, "reserved by:"), h("ol", { class: "stack" }, ...state.stacks[seg.stack].split("\n").map((f) => h("li", {}, f))));
    }
    this.tip.style.left = `${ev.clientX + 14}px`;
    this.tip.style.top = `${ev.clientY + 14}px`;
    this.tip.hidden = false;
  }
}

function blockLines(b: SegBlock, stacks: string[]): HTMLElement[] {
  const lines: HTMLElement[] = [h("div", { class: "tt-name" }, `${formatBytes(b.size)} ${STATE_LABEL[b.state] ?? b.state} at ${hexAddr(b.addr)}`)];
  if (b.state !== "inactive") {
    const slack = b.size - b.requested;
    lines.push(h("div", {}, `requested ${formatBytes(b.requested)}${slack > 0 ? ` (+${formatBytes(slack)} rounding)` : ""}` +
      (b.size_exact ? "" : "; block size = requested size: the trace does not record the rounded one")));
    const stack = b.stack >= 0 ? stacks[b.stack] : "";
    lines.push(stack ? h("ol", { class: "stack" }, ...stack.split("\n").map((f) => h("li", {}, f))) : h("div", { class: "muted" }, "no stack recorded"));
  }
  return lines;
}

function drawBlock(ctx: CanvasRenderingContext2D, b: SegBlock, seg: Seg, row: RowGeom, y: number, hgt: number): void {
  const x = row.left + (b.offset / seg.size) * row.width;
  const w = Math.max((b.size / seg.size) * row.width, 0.5);
  ctx.fillStyle = FILL[b.state] ?? "#6b7280";
  ctx.fillRect(x, y, w, hgt);
  if (b.state === "active_allocated" && b.size > b.requested) {
    const used = (b.requested / b.size) * w;
    ctx.fillStyle = SLACK;
    ctx.fillRect(x + used, y, w - used, hgt);
  }
  if (b.state !== "inactive" && w > 3) {
    ctx.fillStyle = "rgba(255,255,255,0.8)";
    ctx.fillRect(x + w - 1, y, 1, hgt); // block boundary
  }
}

function legend(state: string, label: string): HTMLElement {
  return h("span", { class: "seg-legend" }, h("i", { style: `background:${FILL[state]}` }), label);
}
