// Slice colours from names, and label text chosen for WCAG contrast against each fill.

export type Rgb = [number, number, number];

const SATURATION = 0.55;

export function hueFor(name: string): number {
  let hash = 2166136261;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 16777619);
  return (hash >>> 0) % 360;
}

// Colours by name, remembered: the painters ask for one per slice per draw, and a kernel's name is
// hundreds of characters to hash. Cleared when it grows past CACHE_LIMIT names.
const CACHE_LIMIT = 50_000;
const fills = new Map<string, string>();
const labels = new Map<string, string>();

function remembered(cache: Map<string, string>, key: string, make: () => string): string {
  let found = cache.get(key);
  if (found === undefined) {
    if (cache.size >= CACHE_LIMIT) cache.clear();
    found = make();
    cache.set(key, found);
  }
  return found;
}

export function colorFor(name: string, alpha = 1): string {
  const make = () => `hsla(${hueFor(name)}, ${SATURATION * 100}%, ${alpha < 1 ? 70 : 58}%, ${alpha})`;
  return alpha === 1 ? remembered(fills, name, make) : make();
}

/** The label colour on a slice named `name` (opaque fill): `textOn(fillRgb(name))`, remembered. */
export function labelColorFor(name: string): string {
  return remembered(labels, name, () => textOn(fillRgb(name)));
}

export function hslToRgb(hue: number, s: number, l: number): Rgb {
  const k = (n: number) => (n + hue / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1));
  return [f(0), f(8), f(4)].map((v) => Math.round(v * 255)) as Rgb;
}

/** The colour `colorFor(name, alpha)` shows over a white background. */
export function fillRgb(name: string, alpha = 1): Rgb {
  const rgb = hslToRgb(hueFor(name), SATURATION, alpha < 1 ? 0.7 : 0.58);
  return rgb.map((c) => Math.round(c * alpha + 255 * (1 - alpha))) as Rgb;
}

/** WCAG relative luminance of an sRGB colour (0-255 channels). */
export function luminance([r, g, b]: Rgb): number {
  const lin = (c: number) => (c / 255 <= 0.04045 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

export function contrast(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

export const DARK_TEXT: Rgb = [0, 0, 0];  // pure black: the only dark that clears 4.5:1 on every mid-tone fill
export const LIGHT_TEXT: Rgb = [255, 255, 255];

/** Dark or light label text, whichever contrasts more with `fill` (always at least 4.5:1 here). */
export function textOn(fill: Rgb): string {
  return contrast(fill, DARK_TEXT) >= contrast(fill, LIGHT_TEXT) ? "#000000" : "#ffffff";
}
