// Human-readable durations, sizes and axis ticks. Times are ns offsets from the run start.

const TIME_UNITS: [number, string][] = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];

export function formatDuration(ns: number): string {
  const abs = Math.abs(ns);
  for (const [scale, unit] of TIME_UNITS) {
    if (abs >= scale || scale === 1) {
      const value = ns / scale;
      const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
      return `${value.toFixed(scale === 1 ? 0 : digits)} ${unit}`;
    }
  }
  return `${ns} ns`;
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let i = 0;
  while (Math.abs(value) >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return i === 0 ? `${value} B` : `${value.toFixed(Math.abs(value) >= 100 ? 0 : 1)} ${units[i]}`;
}

const COUNT = new Intl.NumberFormat("en-US"); // one formatter: toLocaleString builds one per call (0.1 ms)

export function formatCount(n: number): string {
  return COUNT.format(n);
}

export interface Tick { ns: number; label: string; }

/** Ticks at a 1/2/5 x 10^k ns step so that about `target` fit the span; labels in the unit of the largest
 * tick ("131 ms", "1.31 s", never "131000 µs"), with as many decimals as the step needs. */
export function axisTicks(startNs: number, endNs: number, target: number): { step: number; ticks: Tick[] } {
  const span = Math.max(endNs - startNs, 1);
  const raw = span / Math.max(target, 1);
  const pow = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? 10 * pow;
  const largest = Math.max(Math.abs(startNs), Math.abs(endNs), step);
  const [scale, unit] = TIME_UNITS.find(([s]) => largest >= s) ?? [1, "ns"];
  const decimals = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
  const ticks: Tick[] = [];
  for (let t = Math.ceil(startNs / step) * step; t <= endNs; t += step) {
    ticks.push({ ns: t, label: `${(t / scale).toFixed(decimals)} ${unit}` });
  }
  return { step, ticks };
}

/** Splits reST-style text into plain runs and ``code`` (or `code`) spans. */
export function codeSpans(text: string): { text: string; code: boolean }[] {
  const parts = text.split(/``([^`]+)``|`([^`]+)`/);
  const out: { text: string; code: boolean }[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (part) out.push({ text: part, code: i % 3 !== 0 });
  }
  return out;
}

/** `end - start` of two integer times the API may send as strings (epoch ns past 2^53), exactly. */
export function spanNs(start: number | string, end: number | string): number {
  return typeof start === "number" && typeof end === "number" ? end - start : Number(BigInt(end) - BigInt(start));
}
