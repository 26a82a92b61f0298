// Counter tracks on the timeline: a value scale, the value under the pointer in the counter's unit,
// display modes (step, line, rate) and a log scale when the values span orders of magnitude.
// The timeline calls `drawCounter` and `counterTip`; everything here but the drawing is pure.
import type { CounterData, CounterTrack } from "./api";
import { h } from "./dom";
import { formatBytes } from "./format";

export type CounterMode = "step" | "line" | "rate";
export const COUNTER_MODES: CounterMode[] = ["step", "line", "rate"];
/** A scale is logarithmic when the largest positive value is at least this many times the smallest. */
export const LOG_RATIO = 1000;

export type CounterSeries = CounterData["series"][string];
export interface Scale { lo: number; hi: number; log: boolean; }

/** A value in the counter's own unit, one unit for the whole row: bytes as KiB/MiB/GiB, percentages with %. */
export function formatCounterValue(value: number, unit: string): string {
  if (unit === "bytes") return formatBytes(Math.round(value));
  if (unit === "bytes/s") return `${formatBytes(Math.round(value))}/s`;
  const abs = Math.abs(value);
  const text = abs >= 100 || Number.isInteger(value) ? value.toFixed(0) : abs >= 1 ? value.toFixed(1) : value.toPrecision(2);
  return unit === "%" ? `${text}%` : unit ? `${text} ${unit}` : text;
}

/** The unit of a mode's values: a rate is per second. */
export function modeUnit(unit: string, mode: CounterMode): string {
  return mode === "rate" ? `${unit || "units"}/s` : unit;
}

/** The per-second change between samples, placed at each later sample (the first has none: 0). */
export function rates(ts: number[], values: number[]): number[] {
  return values.map((v, i) => (i && ts[i] > ts[i - 1] ? ((v - values[i - 1]) / (ts[i] - ts[i - 1])) * 1e9 : 0));
}

/** The scale of values: from 0 (or the lowest below it) to the highest; log when they span >= LOG_RATIO. */
export function scaleOf(values: number[]): Scale {
  let lo = 0;
  let hi = 0;
  let minPositive = Infinity;
  for (const v of values) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
    if (v > 0) minPositive = Math.min(minPositive, v);
  }
  if (hi <= lo) hi = lo + 1;
  const log = lo >= 0 && minPositive < Infinity && hi / minPositive >= LOG_RATIO;
  return { lo: log ? minPositive : lo, hi, log };
}

/** 0 at the bottom of the scale, 1 at its top (values at or below a log scale's bottom sit on it). */
export function fraction(scale: Scale, v: number): number {
  if (scale.log) return v <= scale.lo ? 0 : Math.log(v / scale.lo) / Math.log(scale.hi / scale.lo);
  return (v - scale.lo) / (scale.hi - scale.lo);
}

/** The values a mode draws from a window's buckets: the peak per pixel for steps (no spike is lost),
 *  the last sample for lines, the change per second of the last samples for rates. */
export function modeValues(s: CounterSeries, mode: CounterMode): number[] {
  if (mode === "step") return s.max;
  return mode === "line" ? s.last : rates(s.ts, s.last);
}

/** The bucket at or before `t` (-1 before the first sample). */
export function sampleAt(ts: number[], t: number): number {
  let lo = 0;
  let hi = ts.length - 1;
  if (hi < 0 || ts[0] > t) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ts[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

const modes = new Map<number, CounterMode>();

export function counterMode(c: CounterTrack): CounterMode {
  return modes.get(c.id) ?? "step";
}

/** A small button on the counter's label that cycles its display mode. */
export function modeButton(c: CounterTrack, changed: () => void): HTMLElement {
  const button = h("button", { class: "counter-mode", "data-counter-mode": c.id, title: "Display: step (peak per pixel), line, or rate per second" }, counterMode(c));
  button.addEventListener("click", (ev) => {
    ev.stopPropagation();
    const next = COUNTER_MODES[(COUNTER_MODES.indexOf(counterMode(c)) + 1) % COUNTER_MODES.length];
    modes.set(c.id, next);
    button.textContent = next;
    changed();
  });
  return button;
}

export interface RowBox { y: number; height: number; width: number; toPx: (ns: number) => number; }

/** One counter row: the filled curve in its mode, and its scale (top and bottom values, "log" when logarithmic). */
export function drawCounter(ctx: CanvasRenderingContext2D, c: CounterTrack, s: CounterSeries | undefined, box: RowBox, text: string): void {
  if (!s || !s.ts.length) return;
  const mode = counterMode(c);
  const values = modeValues(s, mode);
  const scale = scaleOf(values);
  const bottom = box.y + box.height - 3;
  const yOf = (v: number) => bottom - Math.min(Math.max(fraction(scale, v), 0), 1) * (box.height - 12);
  ctx.fillStyle = "rgba(70, 120, 200, 0.3)";
  ctx.strokeStyle = "rgba(40, 90, 170, 0.95)";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(Math.max(box.toPx(s.ts[0]), 0), yOf(scale.log ? scale.lo : 0));
  for (let i = 0; i < s.ts.length; i++) {
    const x = Math.max(box.toPx(s.ts[i]), 0);
    const next = Math.min(i + 1 < s.ts.length ? box.toPx(s.ts[i + 1]) : box.width, box.width);
    ctx.lineTo(x, yOf(values[i]));
    if (mode !== "line") ctx.lineTo(next, yOf(values[i]));
  }
  ctx.stroke();
  ctx.lineTo(box.width, yOf(scale.log ? scale.lo : 0));
  ctx.closePath();
  ctx.fill();
  const unit = modeUnit(c.unit, mode);
  ctx.fillStyle = text;
  ctx.font = "9px system-ui, sans-serif";
  ctx.textBaseline = "top";
  ctx.fillText(`${formatCounterValue(scale.hi, unit)}${scale.log ? " (log)" : ""}`, 4, box.y + 1);
  ctx.textBaseline = "bottom";
  ctx.fillText(formatCounterValue(scale.log ? scale.lo : Math.min(scale.lo, 0), unit), 4, box.y + box.height - 1);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
}

/** The tooltip lines of a counter at time `t`: its value in the row's unit, and the pixel's range when it varies. */
export function counterTip(c: CounterTrack, s: CounterSeries | undefined, t: number): HTMLElement[] {
  const mode = counterMode(c);
  const k = s ? sampleAt(s.ts, t) : -1;
  const unit = modeUnit(c.unit, mode);
  const lines = [h("div", { class: "tt-name" }, c.name)];
  if (!s || k < 0) return [...lines, h("div", {}, "no sample yet")];
  const value = mode === "rate" ? rates(s.ts, s.last)[k] : s.last[k];
  lines.push(h("div", { class: "counter-value" }, formatCounterValue(value, unit)));
  if (mode !== "rate" && s.min[k] !== s.max[k]) {
    lines.push(h("div", { class: "muted" }, `${formatCounterValue(s.min[k], unit)} to ${formatCounterValue(s.max[k], unit)} in this pixel`));
  }
  lines.push(h("div", { class: "muted" }, `display: ${mode}`));
  return lines;
}
