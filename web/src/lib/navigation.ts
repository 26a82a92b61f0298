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
export function drawLatency(ctx: CanvasRenderingContext2D, a: { x: number; y: number }, b: { x: number; y: number }, text: string): void {
  ctx.font = "bold 10px system-ui, sans-serif";
  const w = ctx.measureText(text).width + 6;
  const x = (a.x + b.x) / 2 - w / 2;
  const y = (a.y + b.y) / 2 - 7;
  ctx.fillStyle = "rgba(255, 255, 255, 0.92)";
  ctx.fillRect(x, y, w, 14);
  ctx.fillStyle = "#9a3412";
  ctx.fillText(text, x + 3, y + 7);
  ctx.font = "11px system-ui, sans-serif";
}
