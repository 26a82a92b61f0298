// Memory viewer: the allocator tab (stacked live allocations) and the memory tab (bytes counters).
import type { AllocSource, Allocations, EventId, Frame, Meta, MemorySeries } from "../lib/api";
import { busy, get } from "../lib/api";
import { append, clear, h, table, sizedContext } from "../lib/dom";
import { brush, memoryCharts, SharedRange, showRange } from "./memchart";
import { axisTicks, formatBytes, formatCount, formatDuration } from "../lib/format";
import type { Band } from "./memlayout";
import { bandAt, stackAllocations } from "./memlayout";
import { colorFor } from "../lib/color";
import type { SegmentFocus } from "./segments";
import { segmentView } from "./segments";
import { canvasColors } from "../lib/theme";

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d"];

export class MemoryPage {
  readonly root = h("div", { class: "page memory-page" });
  private readonly body = h("div", { class: "memory-body" });
  private readonly tabs = h("div", { class: "subtabs" });

  constructor(private readonly meta: Meta, private readonly jump: (run: string, rank: number, ts: number) => void,
    private readonly openTime: (ts: number) => void = () => undefined) {
    for (const [key, label] of [["allocator", "PyTorch allocator"], ["segments", "Allocator segments"], ["memory", "Device and host memory"]] as const) {
      append(this.tabs, h("button", { "data-subtab": key, onclick: () => void this.show(key) }, label));
    }
    append(this.root, this.tabs, this.body);
    void this.show("allocator");
  }

  private async show(tab: "allocator" | "segments" | "memory", focus?: SegmentFocus): Promise<void> {
    for (const b of this.tabs.querySelectorAll("button")) b.classList.toggle("active", (b as HTMLElement).dataset.subtab === tab);
    clear(this.body);
    if (tab === "allocator") await this.allocator();
    else if (tab === "segments") await segmentView(this.body, focus);
    else await this.counters();
  }

  private async allocator(): Promise<void> {
    const sources = await get<AllocSource[]>("/api/memory/sources");
    if (!sources.length) {
      append(this.body, h("p", { class: "empty" }, "No allocator snapshot in this dataset. Export one with Profiler.export_snapshot(name) while profiling a device run."));
      return;
    }
    const pick = h("select", { "aria-label": "Allocations of" }, ...sources.map((s, i) => h("option", { value: i },
      `rank ${s.rank} · ${s.device < 0 ? "host (CPU)" : `device ${s.device}`} (${formatCount(s.count)} allocations${s.origin === "events" ? ", from [memory] events" : ""})`)));
    const chartBox = h("div", { class: "alloc-box" });
    pick.addEventListener("change", () => void this.drawAllocations(chartBox, sources[Number(pick.value)]));
    append(this.body, h("div", { class: "toolbar" }, pick, h("span", { class: "hint" }, "hover: size, lifetime, stack · click: the op running at that moment · shift-click: the allocator's segments then · drag: zoom · double-click: all")), chartBox);
    // the source with the largest block first (a device rather than the host's 8-byte blocks)
    const first = sources.reduce((best, x, i) => (x.largest_bytes > sources[best].largest_bytes ? i : best), 0);
    pick.value = String(first);
    await this.drawAllocations(chartBox, sources[first]);
  }

  private async drawAllocations(box: HTMLElement, s: AllocSource): Promise<void> {
    const data = await get<Allocations>("/api/memory/allocations", { run: s.run, rank: s.rank, device: s.device });
    clear(box);
    const { bands, total } = stackAllocations(data.allocations, data.end);
    const canvas = h("canvas", { class: "alloc-canvas" });
    const tip = h("div", { class: "tooltip", hidden: true });
    const note = data.total_count > data.allocations.length
      ? `${formatCount(data.allocations.length)} largest of ${formatCount(data.total_count)} allocations drawn one by one; the rest are the grey band on top.`
      : `${formatCount(data.total_count)} allocations.`;
    const origin = data.origin === "events"
      ? " No allocator snapshot here: blocks rebuilt from the trace's [memory] events (an allocation paired with the next free of its address); stacks are the Python frames active at each allocation (with_stack=True)." : "";
    const range = new SharedRange(data.end);
    const reset = h("button", { class: "reset-zoom", onclick: () => range.reset() }, "Show all");
    const noteLine = h("p", { class: "muted alloc-note" }, note + origin, " ", reset);
    append(box, noteLine, canvas, tip, this.largestList(s));
    showRange(box, range);
    const others = (t: number) => {
      let v = 0;
      for (let i = 0; i < data.others.ts.length && data.others.ts[i] <= t; i++) v = data.others.bytes[i];
      return v;
    };
    const baseline = data.baseline_bytes ?? 0; // resident before the trace: drawn under every block
    if (baseline > 0) {
      append(noteLine, " ", h("span", { class: "alloc-baseline" },
        `${formatBytes(baseline)} resident before the trace (the allocator's total at its first event that no block here shows): the grey floor, counted in the peak.`));
    }
    const live = total.bytes.map((b, i) => baseline + b + others(total.ts[i]));
    const peak = Math.max(...live, 1);
    if (live.length) {
      const peakTs = total.ts[live.indexOf(Math.max(...live))];
      append(noteLine, " ", h("a", { href: `?page=timeline&start=${Math.max(peakTs - 50_000, 0)}&end=${peakTs + 50_000}`,
        class: "peak-link alloc-peak", title: "open the timeline at the peak",
        onclick: (ev: Event) => { ev.preventDefault(); this.openTime(peakTs); } }, `peak ${formatBytes(peak)} at ${formatDuration(peakTs)}`));
    }
    const geom = { left: 80, height: 360, width: 800 };
    const x = (t: number) => geom.left + ((t - range.start) / Math.max(range.end - range.start, 1)) * (geom.width - geom.left - 10);
    const tOf = (px: number) => range.start + ((px - geom.left) / (geom.width - geom.left - 10)) * (range.end - range.start);
    const axisY = (b: number) => geom.height - 20 - (b / peak) * (geom.height - 30);
    const y = (b: number) => axisY(b + baseline);
    const draw = (sel: [number, number] | null = null) => {
      geom.width = canvas.clientWidth || 800;
      const ctx = sizedContext(canvas, geom.width, geom.height);
      ctx.font = "11px system-ui, sans-serif";
      ctx.save();
      ctx.beginPath();
      ctx.rect(geom.left, 0, geom.width - geom.left, geom.height - 16);
      ctx.clip();
      if (baseline > 0) {
        ctx.fillStyle = "rgba(120,120,120,0.18)";
        ctx.fillRect(geom.left, axisY(baseline), geom.width - geom.left, axisY(0) - axisY(baseline));
      }
      for (const band of bands) drawBand(ctx, band, x, y);
      ctx.fillStyle = "rgba(120,120,120,0.35)";
      for (let i = 0; i < total.ts.length; i++) {
        const t1 = i + 1 < total.ts.length ? total.ts[i + 1] : data.end;
        const o = others(total.ts[i]);
        if (o > 0) ctx.fillRect(x(total.ts[i]), y(total.bytes[i] + o), x(t1) - x(total.ts[i]), y(total.bytes[i]) - y(total.bytes[i] + o));
      }
      if (sel) {
        ctx.fillStyle = "rgba(60, 110, 220, 0.18)";
        ctx.fillRect(Math.min(...sel), 0, Math.abs(sel[1] - sel[0]), geom.height - 16);
      }
      ctx.restore();
      ctx.fillStyle = canvasColors().axisText;
      for (const frac of [0, 0.5, 1]) ctx.fillText(formatBytes(peak * frac), 2, axisY(peak * frac) + 4);
      for (const t of axisTicks(range.start, range.end, 6).ticks) ctx.fillText(t.label, x(t.ns), geom.height - 5);
      ctx.fillStyle = "#b91c1c";
      ctx.fillText(`peak ${formatBytes(peak)}`, geom.width - 120, 12);
    };
    new ResizeObserver(() => draw()).observe(canvas);
    range.on(() => draw());
    brush(canvas, tOf, range, draw);
    const stacks = new Map<number, Promise<Frame[]>>();
    const bandUnder = (ev: MouseEvent): [Band | null, number] => {
      const rect = canvas.getBoundingClientRect();
      const t = tOf(ev.clientX - rect.left);
      const bytes = ((geom.height - 20 - (ev.clientY - rect.top)) / (geom.height - 30)) * peak - baseline;
      return [bandAt(bands, t, bytes), t];
    };
    let shown: Band | null = null;
    canvas.addEventListener("mousemove", async (ev) => {
      const [band] = bandUnder(ev);
      tip.style.left = `${ev.clientX + 14}px`;
      tip.style.top = `${ev.clientY + 14}px`;
      if (band === shown && band) return;
      shown = band;
      if (!band) {
        tip.hidden = true;
        return;
      }
      const a = band.alloc;
      const life = a.free === null ? "still live at the end" : `freed after ${formatDuration(a.free - a.alloc)}`;
      clear(tip);
      append(tip, h("div", { class: "tt-name" }, `${formatBytes(a.size)} at 0x${BigInt(a.addr).toString(16)}`),
        h("div", {}, `allocated at ${formatDuration(a.alloc)}, ${life}`));
      tip.hidden = false;
      if (a.stack_id >= 0) {
        if (!stacks.has(a.stack_id)) stacks.set(a.stack_id, get<Frame[]>("/api/stack", { run: s.run, rank: s.rank, stack_id: a.stack_id }));
        const frames = await stacks.get(a.stack_id)!;
        // another allocation may be under the pointer by the time the stack arrives
        if (!tip.hidden && shown === band) append(tip, h("ol", { class: "stack" }, ...frames.map((f) => h("li", {}, `${f.name} ${f.file}:${f.line}`))));
      }
    });
    canvas.addEventListener("mouseleave", () => {
      tip.hidden = true;
      shown = null;
    });
    canvas.addEventListener("click", (ev) => {
      const [band, t] = bandUnder(ev);
      if (ev.shiftKey) void this.show("segments", { run: s.run, rank: s.rank, device: s.device, at: Math.max(t, 0) });
      else if (band) this.jump(s.run, s.rank, band.alloc.alloc);
    });
  }

  private async counters(): Promise<void> {
    const data = await get<{ series: MemorySeries[] }>("/api/memory/series");
    if (!data.series.length) {
      append(this.body, h("p", { class: "empty" }, "No memory counters in this dataset (capture with ProfileMode.HOST_MEMORY, or on a device)."));
      return;
    }
    const byRank = new Map<string, MemorySeries[]>();
    for (const s of data.series) byRank.set(`${s.run}:${s.rank}`, [...(byRank.get(`${s.run}:${s.rank}`) ?? []), s]);
    const range = new SharedRange(this.meta.span_ns); // one time range for every chart of every rank
    append(this.body, h("p", { class: "muted" }, "Each counter on its own scale. Drag on a chart to zoom all of them to a range, double-click (or Show all) to see everything; a peak's link opens the timeline there."));
    for (const [key, list] of byRank) {
      const [, rank] = key.split(":");
      append(this.body, memoryCharts(`rank ${rank}: memory over time`, list.map((s, i) => ({
        label: s.name, ts: s.ts, values: s.bytes, color: PALETTE[i % PALETTE.length], peak: { ts: s.peak.ts, value: s.peak.bytes },
      })), range, this.openTime));
    }
  }

  /** The largest allocations, filtered by size and by the text of their stack; a row opens the op running when it was made. */
  private largestList(s: AllocSource): HTMLElement {
    const minMiB = h("input", { type: "number", min: 0, step: "any", value: "0", class: "min-size", "aria-label": "Smallest size in MiB" });
    const stackText = h("input", { type: "search", class: "stack-filter", placeholder: "stack contains…", "aria-label": "Stack contains" });
    const out = h("div", { class: "largest-out" });
    let timer = 0;
    const load = async () => {
      const found = await get<LargestAllocations>("/api/memory/largest", { run: s.run, rank: s.rank, device: s.device,
        min_bytes: Math.round(Math.max(Number(minMiB.value) || 0, 0) * 2 ** 20), stack: stackText.value });
      const rows = found.allocations.map((a) => [formatBytes(a.size), a.alloc === null ? "before recording" : formatDuration(a.alloc),
        a.free === null ? "live at the end" : formatDuration(a.free - (a.alloc ?? 0)),
        h("span", { class: "stack-text", title: a.stack }, a.stack.split("\n")[0] || "no stack recorded")]);
      out.replaceChildren(h("p", { class: "muted" }, `${formatCount(found.matching)} allocation(s) match; the ${formatCount(found.allocations.length)} largest are listed.`),
        table(["size", "allocated at", "lifetime", "stack (innermost frame; all on hover)"], rows,
          (i) => this.jump(s.run, s.rank, found.allocations[i].alloc ?? 0)));
    };
    let waiting: (() => void) | null = null; // the page is busy from the keystroke until the list is drawn
    const later = () => {
      window.clearTimeout(timer);
      waiting ??= busy();
      timer = window.setTimeout(() => {
        const done = waiting;
        waiting = null;
        void load().finally(() => done?.());
      }, 250);
    };
    minMiB.addEventListener("input", later);
    stackText.addEventListener("input", later);
    void load();
    return h("section", { class: "largest" }, h("h3", {}, "Largest allocations"),
      h("div", { class: "toolbar" }, h("label", {}, "at least ", minMiB, " MiB"), stackText), out);
  }
}

interface LargestAllocations { origin: string; matching: number; allocations: { addr: number | string; size: number; alloc: number | null; free: number | null; stack_id: number; event_id: EventId; stack: string }[]; }

function drawBand(ctx: CanvasRenderingContext2D, band: Band, x: (t: number) => number, y: (b: number) => number): void {
  ctx.fillStyle = colorFor(`alloc${band.alloc.stack_id}:${band.alloc.size}`, 0.85);
  for (let k = 0; k < band.ts.length; k++) {
    const t0 = band.ts[k];
    const t1 = k + 1 < band.ts.length ? band.ts[k + 1] : band.end;
    const top = y(band.offset[k] + band.alloc.size);
    ctx.fillRect(x(t0), top, Math.max(x(t1) - x(t0), 1), Math.max(y(band.offset[k]) - top, 0.5));
  }
}
