// Counter tracks on the timeline: a value scale, the value under the pointer in the counter's unit,
// display modes (step, line, rate) and a log scale when the values span orders of magnitude (or when
// chosen). Each counter's mode and scale travel in the deep link (`cmode=c5:line:log,c7:rate`).
// The timeline calls `drawCounter` and `counterTip`; everything here but the drawing and the chosen modes is pure.
import type { CounterData, CounterTrack } from "../lib/api";
import { h } from "../lib/dom";
import { formatBytes } from "../lib/format";

export type CounterMode = "step" | "line" | "rate";
export const COUNTER_MODES: CounterMode[] = ["step", "line", "rate"];
/** The value scale: `auto` (logarithmic when the values span LOG_RATIO), or always `log` or `linear`. */
export type ScaleChoice = "auto" | "log" | "linear";
export const SCALE_CHOICES: ScaleChoice[] = ["auto", "log", "linear"];
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

/** The scale of values: from 0 (or the lowest below it) to the highest; log when they span >= LOG_RATIO
 *  (`auto`) or when `log` is chosen, as long as no value is negative and one is positive. */
export function scaleOf(values: number[], choice: ScaleChoice = "auto"): Scale {
  let lo = 0;
  let hi = 0;
  let minPositive = Infinity;
  for (const v of values) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
    if (v > 0) minPositive = Math.min(minPositive, v);
  }
  const canLog = lo >= 0 && minPositive < Infinity;
  const log = choice === "log" ? canLog : choice === "auto" && canLog && hi / minPositive >= LOG_RATIO;
  if (log) return { lo: minPositive, hi: hi > minPositive ? hi : minPositive * 10, log };
  return { lo, hi: hi > lo ? hi : lo + 1, log };
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

interface Display { mode: CounterMode; scale: ScaleChoice; }
const DEFAULT_DISPLAY: Display = { mode: "step", scale: "auto" };
/** The display chosen per counter id (what the buttons and the link set); absent: step, auto. */
const displays = new Map<number, Display>();

export function counterMode(c: CounterTrack): CounterMode {
  return (displays.get(c.id) ?? DEFAULT_DISPLAY).mode;
}

export function counterScale(c: CounterTrack): ScaleChoice {
  return (displays.get(c.id) ?? DEFAULT_DISPLAY).scale;
}

function choose(id: number, change: Partial<Display>): void {
  const next = { ...(displays.get(id) ?? DEFAULT_DISPLAY), ...change };
  if (next.mode === "step" && next.scale === "auto") displays.delete(id);
  else displays.set(id, next);
}

/** The link text of the chosen displays: `c5:line:log,c7:rate` (counter key, mode, then the scale unless
 *  auto), counters in id order; undefined when every counter shows step on an automatic scale. */
export function formatCounterDisplays(): string | undefined {
  const items = [...displays].sort((a, b) => a[0] - b[0])
    .map(([id, d]) => [`c${id}`, d.mode, ...(d.scale === "auto" ? [] : [d.scale])].join(":"));
  return items.length ? items.join(",") : undefined;
}

/** The displays of a link text (`formatCounterDisplays`): entries that are not `cID:MODE[:SCALE]` with a
 *  known mode and scale are left out. */
export function parseCounterDisplays(text: string | undefined): Map<number, Display> {
  const out = new Map<number, Display>();
  for (const item of (text ?? "").split(",")) {
    const [key, mode, scale = "auto", ...rest] = item.split(":");
    if (!/^c\d+$/.test(key ?? "") || rest.length) continue;
    if (!COUNTER_MODES.includes(mode as CounterMode) || !SCALE_CHOICES.includes(scale as ScaleChoice)) continue;
    out.set(Number(key.slice(1)), { mode: mode as CounterMode, scale: scale as ScaleChoice });
  }
  return out;
}

/** Sets every counter's display from a link text (the others go back to step, auto). */
export function setCounterDisplays(text: string | undefined): void {
  displays.clear();
  for (const [id, d] of parseCounterDisplays(text)) choose(id, d);
}

const SCALE_TEXT: Record<ScaleChoice, string> = { auto: "auto", log: "log", linear: "lin" };

/** Two small buttons on the counter's label: one cycles its display mode, one its scale (auto, log, linear). */
export function counterButtons(c: CounterTrack, changed: () => void): HTMLElement {
  const button = h("button", { class: "counter-mode", "data-counter-mode": c.id, title: "Display: step (peak per pixel), line, or rate per second" }, counterMode(c));
  button.addEventListener("click", (ev) => {
    ev.stopPropagation();
    const next = COUNTER_MODES[(COUNTER_MODES.indexOf(counterMode(c)) + 1) % COUNTER_MODES.length];
    choose(c.id, { mode: next });
    button.textContent = next;
    changed();
  });
  const scale = h("button", { class: "counter-scale", "data-counter-scale": c.id,
    title: "Scale: auto (logarithmic when the values span 1000×), log, or linear" }, SCALE_TEXT[counterScale(c)]);
  scale.addEventListener("click", (ev) => {
    ev.stopPropagation();
    const next = SCALE_CHOICES[(SCALE_CHOICES.indexOf(counterScale(c)) + 1) % SCALE_CHOICES.length];
    choose(c.id, { scale: next });
    scale.textContent = SCALE_TEXT[next];
    changed();
  });
  return h("span", { class: "counter-buttons" }, button, scale);
}

export interface RowBox { y: number; height: number; width: number; toPx: (ns: number) => number; }

/** One counter row: the filled curve in its mode, and its scale (top and bottom values, "log" when logarithmic). */
export function drawCounter(ctx: CanvasRenderingContext2D, c: CounterTrack, s: CounterSeries | undefined, box: RowBox, text: string): void {
  if (!s || !s.ts.length) return;
  const mode = counterMode(c);
  const values = modeValues(s, mode);
  const scale = scaleOf(values, counterScale(c));
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
  lines.push(h("div", { class: "muted" }, `display: ${mode} · scale: ${counterScale(c)}`));
  return lines;
}
