// Label widths, measured once per text and font: a draw labels thousands of slices, and measureText is
// the dearest call of a label, while a name's width never changes. Cleared when a font holds LIMIT texts.

const LIMIT = 50_000;
const byFont = new Map<string, Map<string, number>>();

/** The width of each text in `ctx`'s font as it is now (px), each text measured once. */
export function textWidths(ctx: CanvasRenderingContext2D): (text: string) => number {
  const font = ctx.font;
  let widths = byFont.get(font);
  if (!widths) byFont.set(font, (widths = new Map()));
  const cache = widths;
  return (text) => {
    let width = cache.get(text);
    if (width === undefined) {
      if (cache.size >= LIMIT) cache.clear();
      width = ctx.measureText(text).width;
      cache.set(text, width);
    }
    return width;
  };
}

/** `text` as it fits in `room` px: whole, or its start and an ellipsis (characters taken in proportion to
 *  the measured width), or "" when not one character fits. */
export function fitText(text: string, room: number, width: (text: string) => number): string {
  const whole = width(text);
  if (whole <= room) return text;
  const chars = Math.floor(((room - width("…")) * text.length) / whole);
  return chars >= 1 ? text.slice(0, chars) + "…" : "";
}
