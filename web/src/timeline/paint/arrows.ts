// Painter of the selected event's flow arrows (op → launch → kernel), with the launch latency.
import type { Brief, Chain, EventId, FlowKinds } from "../../lib/api";
import { drawLatency, latencyLabel, launchLatencyNs } from "../../lib/navigation";

export type Point = { x: number; y: number };

/** Draws `chain`'s edges; `anchor` says where an event is drawn (null when its track is not shown);
 *  `kinds` names the flow kinds (`/api/meta`'s `flow_kinds`, decided by the model). Returns the boxes
 *  of the latency labels drawn. */
export function drawArrows(ctx: CanvasRenderingContext2D, chain: Chain | null, anchor: (b: Brief) => Point | null,
  kinds: FlowKinds): { x: number; y: number; w: number; h: number }[] {
  const labels: { x: number; y: number; w: number; h: number }[] = [];
  if (!chain) return labels;
  const all = new Map<EventId, Brief>();
  for (const b of [chain.event, ...chain.upstream, ...chain.downstream]) if (b) all.set(b.id, b);
  ctx.lineWidth = 1.5;
  for (const edge of chain.edges) {
    const src = all.get(edge.src);
    const dst = all.get(edge.dst);
    if (!src || !dst) continue;
    const a = anchor(src);
    const b = anchor(dst);
    if (!a || !b) continue;
    const color = edge.kind === kinds.launch ? "#c2410c" : edge.kind === kinds.op_to_call ? "#1d4ed8" : "#6d28d9";
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    drawArrow(ctx, a, b);
    if (edge.kind === kinds.launch) labels.push(drawLatency(ctx, b, latencyLabel(launchLatencyNs(src, dst))));
  }
  return labels;
}

function drawArrow(ctx: CanvasRenderingContext2D, a: Point, b: Point): void {
  ctx.beginPath();
  ctx.moveTo(a.x, a.y);
  const bend = Math.max(Math.abs(b.y - a.y) / 2, 20);
  ctx.bezierCurveTo(a.x + 10, a.y + Math.sign(b.y - a.y || 1) * bend, b.x - 10, b.y - Math.sign(b.y - a.y || 1) * bend, b.x, b.y);
  ctx.stroke();
  const angle = Math.atan2(b.y - (b.y - Math.sign(b.y - a.y || 1) * bend), 10);
  ctx.beginPath();
  ctx.moveTo(b.x, b.y);
  ctx.lineTo(b.x - 8 * Math.cos(angle - 0.4), b.y - 8 * Math.sin(angle - 0.4));
  ctx.lineTo(b.x - 8 * Math.cos(angle + 0.4), b.y - 8 * Math.sin(angle + 0.4));
  ctx.closePath();
  ctx.fill();
}
