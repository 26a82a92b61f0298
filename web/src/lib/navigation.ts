// Keyboard navigation between events: the next or previous slice on the selected one's track and
// lane (`.` / `,`), and one flow hop at a time (`]` to the launched work, `[` back to the launch);
// and the launch latency written on each runtime → device arrow.
import type { Brief, Chain } from "./api";
import { get } from "./api";
import type { EventId } from "./ids";
import { formatDuration } from "./format";

/** The slice after (`next`) or before the event on its track and lane; null at either end. */
export function neighbour(id: EventId, dir: "next" | "prev"): Promise<Brief | null> {
  return get<Brief | null>(`/api/neighbour/${id}`, { dir });
}

/** The events one hop downstream (`]`: op → runtime call → device work) or upstream (`[`), in the
 *  server's order (`/api/flows`: the calls that launched device work first, then by start time). */
export function flowHops(chain: Chain | null, dir: "down" | "up"): Brief[] {
  const list = (dir === "down" ? chain?.downstream : chain?.upstream) ?? [];
  return list.filter((b) => (b.hop ?? 1) === 1);
}

/** One hop along the flows: the first of `flowHops`; undefined when there is none. */
export function flowHop(chain: Chain | null, dir: "down" | "up"): Brief | undefined {
  return flowHops(chain, dir)[0];
}

/** The hop after `current` among `alternatives` (a repeated `]` or `[` where `current` leads nowhere
 *  further), wrapping around; undefined when there is no other. */
export function nextAlternative(alternatives: Brief[], current: EventId): Brief | undefined {
  const at = alternatives.findIndex((b) => b.id === current);
  if (at < 0 || alternatives.length < 2) return undefined;
  return alternatives[(at + 1) % alternatives.length];
}

/** Launch latency as HTA counts it: the device work's start minus the end of the runtime call that launched it. */
export function launchLatencyNs(call: Brief, work: Brief): number {
  return work.ts - (call.ts + call.dur);
}

export function latencyLabel(ns: number): string {
  return `launch ${ns < 0 ? "−" : "+"}${formatDuration(Math.abs(ns))}`;
}

/** The latency label at the middle of a runtime → device arrow, on a pale box so it reads over slices. */
/** Where a launch latency label of width `w` goes: in the launched work's own row (`b`, the arrow's
 *  head), ending just before it starts (after it where the row has no room to its left), never
 *  half-way along the arrow, where it would cover the tracks the arrow crosses (other ranks' too). */
export function latencyBox(b: { x: number; y: number }, w: number): { x: number; y: number; w: number; h: number } {
  const x = b.x - w - 4 >= 0 ? b.x - w - 4 : b.x + 4;
  return { x, y: b.y - 7, w, h: 14 };
}

/** Draws the label; returns where it went. */
export function drawLatency(ctx: CanvasRenderingContext2D, b: { x: number; y: number }, text: string): { x: number; y: number; w: number; h: number } {
  ctx.font = "bold 10px system-ui, sans-serif";
  const box = latencyBox(b, ctx.measureText(text).width + 6);
  ctx.fillStyle = "rgba(255, 255, 255, 0.92)";
  ctx.fillRect(box.x, box.y, box.w, box.h);
  ctx.fillStyle = "#9a3412";
  ctx.fillText(text, box.x + 3, box.y + 7);
  ctx.font = "11px system-ui, sans-serif";
  return box;
}
