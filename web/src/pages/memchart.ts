// Memory charts (the Memory page): one chart per counter, each on its own axis (so a host total
// never flattens a process's resident memory), sharing one time range that a drag on any chart
// zooms to (double-click: all of it). Hover shows every chart's value at the pointer; each chart
// labels its own peak, and the peak opens the timeline at that time.
import { h, sizedContext } from "../lib/dom";
import { axisTicks, formatBytes, formatDuration } from "../lib/format";
import { canvasColors, currentTheme } from "../lib/theme";

export interface MemSeries { label: string; ts: number[]; values: number[]; color: string; peak: { ts: number; value: number }; }

/** The value in force at `t` (the last sample at or before it; null before the first). */
export function valueAt(ts: number[], values: number[], t: number): number | null {
  let lo = 0;
  let hi = ts.length - 1;
  if (hi < 0 || ts[0] > t) return null;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ts[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return values[lo];
}

/** The highest value in force anywhere in [start, end] (the sample before `start` included). */
export function maxIn(ts: number[], values: number[], start: number, end: number): number {
  let max = valueAt(ts, values, start) ?? 0;
  for (let i = 0; i < ts.length; i++) if (ts[i] >= start && ts[i] <= end) max = Math.max(max, values[i]);
  return max;
}

/** Where a label `textW` wide starts so it stays inside [left, right], beside `x` (after it when it fits). */
export function labelX(x: number, textW: number, left: number, right: number): number {
  if (x + 6 + textW <= right) return x + 6;
  return Math.max(left, x - 6 - textW);
}

/** The time range the charts share: zooming sets it, `reset` shows everything; listeners redraw. */
export class SharedRange {
  private listeners: (() => void)[] = [];
  start: number;
  end: number;
  constructor(readonly full: number) {
    this.start = 0;
    this.end = Math.max(full, 1);
  }
  set(start: number, end: number): void {
    const lo = Math.max(0, Math.min(start, end));
    const hi = Math.min(this.full, Math.max(start, end));
    if (hi - lo < 1) return;
    [this.start, this.end] = [lo, hi];
    this.changed();
  }
  reset(): void {
    [this.start, this.end] = [0, Math.max(this.full, 1)];
    this.changed();
  }
  get zoomed(): boolean {
    return this.start > 0 || this.end < this.full;
  }
  on(fn: () => void): void {
    this.listeners.push(fn);
  }
  changed(): void {
    for (const fn of this.listeners) fn();
  }
}

/** Drag on `canvas` to pick a time range (drawn as it grows), double-click to show it all. */
export function brush(canvas: HTMLCanvasElement, timeOf: (px: number) => number, range: SharedRange, draw: (sel: [number, number] | null) => void): void {
  let from: number | null = null;
  let dragged = false;
  // the click that ends a drag is no click on what lies under it
  canvas.addEventListener("click", (ev) => { if (dragged) ev.stopImmediatePropagation(); dragged = false; }, true);
  canvas.addEventListener("mousedown", (ev) => {
    if (ev.button !== 0) return;
    from = ev.clientX - canvas.getBoundingClientRect().left;
  });
  canvas.addEventListener("mousemove", (ev) => {
    if (from !== null) draw([from, ev.clientX - canvas.getBoundingClientRect().left]);
  });
  window.addEventListener("mouseup", (ev) => {
    if (from === null) return;
    const to = ev.clientX - canvas.getBoundingClientRect().left;
    const start = from;
    from = null;
    draw(null);
    dragged = Math.abs(to - start) > 4;
    if (dragged) range.set(timeOf(start), timeOf(to));
  });
  canvas.addEventListener("dblclick", () => range.reset());
}

const LEFT = 74;
const RIGHT = 12;
const HEIGHT = 120;

/** One chart per series on a shared range; `openTime` takes a time (offset from the run start). */
export function memoryCharts(title: string, series: MemSeries[], range: SharedRange, openTime: (ts: number) => void,
  format: (v: number) => string = formatBytes): HTMLElement {
  const tip = h("div", { class: "tooltip", hidden: true });
  const hover = { t: null as number | null };
  const charts = series.map((s) => chart(s, range, hover, format, openTime));
  const redrawAll = () => { for (const c of charts) c.draw(null); };
  range.on(redrawAll);
  for (const c of charts) {
    c.canvas.addEventListener("mousemove", (ev) => {
      hover.t = c.timeOf(ev.clientX - c.canvas.getBoundingClientRect().left);
      redrawAll();
      tip.replaceChildren(h("div", { class: "tt-name" }, `at ${formatDuration(hover.t)}`),
        ...series.map((x) => h("div", {}, `${x.label}: ${fmt(valueAt(x.ts, x.values, hover.t!), format)}`)),
        h("div", { class: "muted" }, "drag: zoom to a range · double-click: all"));
      tip.hidden = false;
      tip.style.left = `${Math.min(ev.clientX + 14, window.innerWidth - 340)}px`;
      tip.style.top = `${ev.clientY + 14}px`;
    });
    c.canvas.addEventListener("mouseleave", () => { hover.t = null; tip.hidden = true; redrawAll(); });
  }
  const reset = h("button", { class: "reset-zoom", onclick: () => range.reset() }, "Show all");
  const fig = h("figure", { class: "chart mem-charts" }, h("figcaption", {}, title, " ", reset), ...charts.map((c) => c.root), tip);
  showRange(fig, range);
  return fig;
}

/** The range shown, on `el` (data-start, data-end), for links and tests. */
export function showRange(el: HTMLElement, range: SharedRange): void {
  const set = () => { el.dataset.start = String(Math.round(range.start)); el.dataset.end = String(Math.round(range.end)); };
  set();
  range.on(set);
}

function fmt(v: number | null, format: (v: number) => string): string {
  return v === null ? "no sample yet" : format(v);
}

interface Chart { root: HTMLElement; canvas: HTMLCanvasElement; draw: (sel: [number, number] | null) => void; timeOf: (px: number) => number; }

function chart(s: MemSeries, range: SharedRange, hover: { t: number | null }, format: (v: number) => string, openTime: (ts: number) => void): Chart {
  const canvas = h("canvas", { class: "line-chart mem-chart", "data-series": s.label });
  const peak = h("a", { href: `?page=timeline&start=${Math.max(s.peak.ts - 50_000, 0)}&end=${s.peak.ts + 50_000}`, class: "peak-label peak-link",
    title: "open the timeline at the peak", onclick: (ev: Event) => { ev.preventDefault(); openTime(s.peak.ts); } },
  `peak ${format(s.peak.value)} at ${formatDuration(s.peak.ts)}`);
  const root = h("div", { class: "mem-series" }, h("div", { class: "legend-row" },
    h("span", { class: "legend-item" }, h("span", { class: "swatch", style: `background:${s.color}` }), s.label), peak), canvas);
  const width = () => canvas.clientWidth || 600;
  const x = (t: number) => LEFT + ((t - range.start) / Math.max(range.end - range.start, 1)) * (width() - LEFT - RIGHT);
  const timeOf = (px: number) => range.start + ((px - LEFT) / Math.max(width() - LEFT - RIGHT, 1)) * (range.end - range.start);
  const draw = (sel: [number, number] | null) => {
    const w = width();
    const ctx = sizedContext(canvas, w, HEIGHT);
    const colors = canvasColors();
    const max = Math.max(maxIn(s.ts, s.values, range.start, range.end), 1);
    const y = (v: number) => HEIGHT - 20 - (v / max) * (HEIGHT - 34);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (const frac of [0, 0.5, 1]) {
      ctx.fillStyle = colors.gap;
      ctx.fillRect(LEFT, y(max * frac), w - LEFT - RIGHT, 1);
      ctx.fillStyle = colors.tick;
      ctx.fillText(format(max * frac), 4, y(max * frac));
    }
    ctx.textBaseline = "alphabetic";
    for (const t of axisTicks(range.start, range.end, 6).ticks) ctx.fillText(t.label, x(t.ns), HEIGHT - 4);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT, 0, w - LEFT - RIGHT, HEIGHT);
    ctx.clip();
    ctx.strokeStyle = s.color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let prev: number | null = null;
    for (let i = 0; i < s.ts.length; i++) {
      const px = x(s.ts[i]);
      if (prev === null) ctx.moveTo(px, y(s.values[i]));
      else { ctx.lineTo(px, y(prev)); ctx.lineTo(px, y(s.values[i])); }
      prev = s.values[i];
    }
    if (prev !== null) ctx.lineTo(x(range.end), y(prev));
    ctx.stroke();
    ctx.restore();
    if (s.peak.ts >= range.start && s.peak.ts <= range.end) {
      const px = x(s.peak.ts);
      ctx.fillStyle = currentTheme() === "dark" ? "#f87171" : "#b91c1c"; // the peak link's colour
      ctx.beginPath();
      ctx.arc(px, y(s.peak.value), 4, 0, 2 * Math.PI);
      ctx.fill();
      const text = `▲ ${format(s.peak.value)}`;
      ctx.fillText(text, labelX(px, ctx.measureText(text).width, LEFT, w - RIGHT), Math.max(y(s.peak.value) - 6, 11));
    }
    if (hover.t !== null && hover.t >= range.start && hover.t <= range.end) {
      const px = x(hover.t);
      ctx.fillStyle = colors.axisText;
      ctx.fillRect(px, 0, 1, HEIGHT - 16);
      const value = valueAt(s.ts, s.values, hover.t);
      if (value !== null) {
        const text = format(value);
        ctx.fillText(text, labelX(px, ctx.measureText(text).width, LEFT, w - RIGHT), 11);
      }
    }
    if (sel) {
      ctx.fillStyle = "rgba(60, 110, 220, 0.18)";
      ctx.fillRect(Math.min(...sel), 0, Math.abs(sel[1] - sel[0]), HEIGHT - 16);
    }
  };
  new ResizeObserver(() => draw(null)).observe(canvas);
  brush(canvas, timeOf, range, draw);
  return { root, canvas, draw, timeOf };
}
