// The flamegraph (root at the bottom) or icicle (root at the top) of an area: stacks merged by name
// path, each frame as wide as its time inside the area. Clicking a frame zooms into it.
import type { FlameNodes } from "../lib/api";
import { append, h } from "../lib/dom";
import { colorFor, fillRgb, textOn } from "../lib/color";
import { formatCount, formatDuration } from "../lib/format";

const ROW_H = 16;

export interface FlameRect { node: number; x: number; w: number; level: number; }

/** Frames to draw with `focus` as the full width: its ancestors as full-width bars above it (levels
 *  0..k-1), then its subtree, children ordered by time, largest first. x and w are fractions of the width. */
export function flameLayout(n: FlameNodes, focus = 0): FlameRect[] {
  const children = new Map<number, number[]>();
  n.parent.forEach((p, i) => { if (p >= 0) (children.get(p) ?? children.set(p, []).get(p)!).push(i); });
  for (const list of children.values()) list.sort((a, b) => n.total_ns[b] - n.total_ns[a] || a - b);
  const path: number[] = [];
  for (let at = focus; at >= 0; at = n.parent[at]) path.unshift(at);
  const out: FlameRect[] = path.slice(0, -1).map((node, level) => ({ node, x: 0, w: 1, level }));
  const whole = Math.max(n.total_ns[focus], 1);
  const walk = (node: number, x: number, level: number) => {
    const w = n.total_ns[node] / whole;
    out.push({ node, x, w, level });
    let cx = x;
    for (const c of children.get(node) ?? []) {
      walk(c, cx, level + 1);
      cx += n.total_ns[c] / whole;
    }
  };
  walk(focus, 0, path.length - 1);
  return out;
}

export class Flamegraph {
  readonly root: HTMLElement;
  private readonly canvas = h("canvas", { class: "flame-canvas", tabindex: 0, "aria-label": "Flamegraph of the selection: click a frame to zoom into it" });
  private readonly info = h("p", { class: "muted flame-info" }, "hover a frame for its times; click to zoom in, click the bottom bar to zoom out");
  private rects: FlameRect[] = [];
  private focusNode = 0;
  icicle = false;

  constructor(private readonly nodes: FlameNodes, private readonly picked: (name: string | null) => void) {
    const mode = h("button", { class: "flame-mode", onclick: () => { this.icicle = !this.icicle; mode.textContent = this.icicle ? "flamegraph" : "icicle"; this.draw(); } }, "icicle");
    this.root = h("div", { class: "flame" }, h("div", { class: "flame-bar" }, mode), this.canvas, this.info);
    this.canvas.addEventListener("click", (ev) => this.click(ev));
    this.canvas.addEventListener("mousemove", (ev) => this.hover(ev));
    new ResizeObserver(() => this.draw()).observe(this.root);
  }

  get focused(): number {
    return this.focusNode;
  }

  /** Zooms into `node` (0: the whole selection). */
  focus(node: number): void {
    this.focusNode = node;
    this.picked(node === 0 ? null : this.nodes.name[node]);
    this.draw();
  }

  private levels(): number {
    return this.rects.reduce((m, r) => Math.max(m, r.level + 1), 1);
  }

  private yOf(level: number, levels: number): number {
    return this.icicle ? level * ROW_H : (levels - 1 - level) * ROW_H;
  }

  draw(): void {
    const width = Math.max(this.root.clientWidth, 100);
    this.rects = flameLayout(this.nodes, this.focusNode);
    const levels = this.levels();
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(levels * ROW_H * dpr);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${levels * ROW_H}px`;
    const ctx = this.canvas.getContext("2d")!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (const r of this.rects) {
      const x = r.x * width;
      const w = r.w * width;
      if (w < 0.5) continue;
      const name = this.nodes.name[r.node];
      const y = this.yOf(r.level, levels);
      ctx.fillStyle = r.node === 0 ? "#9ca3af" : colorFor(name);
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW_H - 1);
      if (w > 30) {
        ctx.fillStyle = r.node === 0 ? "#111827" : textOn(fillRgb(name));
        const chars = Math.floor((w - 6) / 6);
        ctx.fillText(name.length > chars ? name.slice(0, Math.max(chars - 1, 1)) + "…" : name, x + 3, y + ROW_H / 2, w - 6);
      }
    }
  }

  private at(ev: MouseEvent): FlameRect | undefined {
    const box = this.canvas.getBoundingClientRect();
    const fx = (ev.clientX - box.left) / Math.max(box.width, 1);
    const levels = this.levels();
    return this.rects.find((r) => fx >= r.x && fx < r.x + r.w && (ev.clientY - box.top) >= this.yOf(r.level, levels)
      && (ev.clientY - box.top) < this.yOf(r.level, levels) + ROW_H);
  }

  private click(ev: MouseEvent): void {
    const r = this.at(ev);
    if (!r) return;
    this.focus(r.node === this.focusNode ? Math.max(this.nodes.parent[r.node], 0) : r.node);
  }

  private hover(ev: MouseEvent): void {
    const r = this.at(ev);
    this.info.replaceChildren();
    if (!r) {
      append(this.info, "hover a frame for its times; click to zoom in");
      return;
    }
    const n = this.nodes;
    const share = n.total_ns[0] ? ` (${((100 * n.total_ns[r.node]) / n.total_ns[0]).toFixed(1)}%)` : "";
    append(this.info, h("strong", {}, n.name[r.node]), ` · total ${formatDuration(n.total_ns[r.node])}${share} · self ${formatDuration(n.self_ns[r.node])} · ${formatCount(n.count[r.node])} call(s)`);
  }
}
