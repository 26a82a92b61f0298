// The timeline's input: wheel zoom and pan, drag to pan or to select an area, click to select,
// and the W A S D keys.
import type { EventId, WindowData } from "../lib/api";
import type { Viewport } from "../lib/viewport";
import { clamp, pan, toNs } from "../lib/viewport";

type Hit = { kind: "slice"; index: number } | { kind: "block"; index: number } | { kind: string };

/** What the input acts on: the timeline's elements, view and selection (timeline.ts). */
export interface InputHost {
  readonly root: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  readonly axis: HTMLCanvasElement;
  readonly scroller: HTMLElement;
  readonly tooltip: HTMLElement;
  readonly extent: { start: number; end: number };
  vp: Viewport;
  range: { start: number; end: number } | null;
  areaTracks: number[];
  readonly windowData: WindowData | null;
  layoutAt(canvasY: number): number;
  dragTracks(top: number | undefined, now: number): number[];
  hit(x: number, y: number): Hit | null;
  showTooltip(ev: MouseEvent): void;
  zoomBy(factor: number, anchorPx?: number): void;
  panBy(px: number): void;
  setViewport(start: number, end: number): void;
  viewMoved(): void;
  requestDraw(): void;
  renderLabels(): void;
  select(id: EventId | undefined): void;
  rangeChosen(start: number, end: number, tracks: number[]): void;
}

/** The most one wheel event zooms in or out: a mouse notch (deltaY 100) zooms 1.35x, a touchpad's
 *  small deltas smoothly less. */
export const WHEEL_ZOOM_MAX = 1.4;

export function wheelZoomFactor(deltaY: number): number {
  const bound = Math.log(WHEEL_ZOOM_MAX);
  return Math.exp(Math.min(Math.max(deltaY * 0.003, -bound), bound));
}

type Drag = { x: number; y: number; vp: Viewport; mode: "pan" | "range"; moved: boolean; top?: number };

export class TimelineInput {
  /** The pointer's last position (client coordinates), anywhere in the window. */
  hover: { x: number; y: number } | null = null;
  private drag: Drag | null = null;

  constructor(private readonly t: InputHost) {
    const { canvas, axis } = t;
    canvas.addEventListener("wheel", (ev) => this.onWheel(ev), { passive: false });
    canvas.addEventListener("mousedown", (ev) => {
      const top = t.layoutAt(ev.clientY - canvas.getBoundingClientRect().top);
      this.drag = { x: ev.clientX, y: ev.clientY, vp: t.vp, mode: ev.shiftKey ? "range" : "pan", moved: false, top };
    });
    axis.addEventListener("mousedown", (ev) => {
      this.drag = { x: ev.clientX, y: ev.clientY, vp: t.vp, mode: "range", moved: false };
    });
    window.addEventListener("mousemove", (ev) => this.onMove(ev));
    window.addEventListener("mouseup", (ev) => this.onUp(ev));
    canvas.addEventListener("mouseleave", () => { t.tooltip.hidden = true; });
    window.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  /** Whether the pointer is over the canvas. */
  overCanvas(): boolean {
    const rect = this.t.canvas.getBoundingClientRect();
    const p = this.hover;
    return !!p && p.x >= rect.left && p.x <= rect.right && p.y >= rect.top && p.y <= rect.bottom;
  }

  private onWheel(ev: WheelEvent): void {
    const rect = this.t.canvas.getBoundingClientRect();
    if (ev.ctrlKey || ev.metaKey) {
      ev.preventDefault();
      this.t.zoomBy(wheelZoomFactor(ev.deltaY), ev.clientX - rect.left);
    } else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      ev.preventDefault();
      this.t.panBy(ev.shiftKey ? ev.deltaY : ev.deltaX);
    }
  }

  private onMove(ev: MouseEvent): void {
    const t = this.t;
    this.hover = { x: ev.clientX, y: ev.clientY };
    if (!this.drag) {
      if (ev.target === t.canvas) t.showTooltip(ev);
      return;
    }
    const dx = ev.clientX - this.drag.x;
    if (Math.abs(dx) > 3 || Math.abs(ev.clientY - this.drag.y) > 3) this.drag.moved = true;
    if (!this.drag.moved) return;
    t.tooltip.hidden = true;
    if (this.drag.mode === "pan") {
      const next = pan(this.drag.vp, -dx);
      t.vp = clamp({ ...next, width: t.vp.width }, t.extent.start, t.extent.end);
      t.scroller.scrollTop += this.drag.y - ev.clientY;
      this.drag.y = ev.clientY;
      t.viewMoved();
    } else {
      const rect = t.canvas.getBoundingClientRect();
      const a = toNs(t.vp, this.drag.x - rect.left);
      const b = toNs(t.vp, ev.clientX - rect.left);
      t.range = { start: Math.max(Math.min(a, b), 0), end: Math.max(a, b) };
      t.areaTracks = t.dragTracks(this.drag.top, t.layoutAt(ev.clientY - rect.top));
      t.requestDraw();
    }
  }

  private onUp(ev: MouseEvent): void {
    const t = this.t;
    const drag = this.drag;
    this.drag = null;
    if (!drag) return;
    if (drag.mode === "range" && drag.moved && t.range) {
      t.renderLabels();
      t.rangeChosen(Math.round(t.range.start), Math.round(t.range.end), t.areaTracks);
      return;
    }
    if (!drag.moved && ev.target === t.canvas) {
      const rect = t.canvas.getBoundingClientRect();
      const found = t.hit(ev.clientX - rect.left, ev.clientY - rect.top);
      const d = t.windowData!;
      if (found?.kind === "slice") t.select(d.slices.id[(found as { index: number }).index]);
      else if (found?.kind === "block") {
        const i = (found as { index: number }).index;
        t.setViewport(d.blocks.ts[i], d.blocks.end[i]);
      } else t.select(undefined);
    }
  }

  private onKey(ev: KeyboardEvent): void {
    const t = this.t;
    const target = ev.target as HTMLElement;
    if (!t.root.isConnected || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName)) return;
    const rect = t.canvas.getBoundingClientRect();
    const anchor = this.hover && this.hover.x >= rect.left && this.hover.x <= rect.right ? this.hover.x - rect.left : t.vp.width / 2;
    const step = t.vp.width * 0.15;
    const actions: Record<string, () => void> = {
      w: () => t.zoomBy(0.7, anchor), s: () => t.zoomBy(1 / 0.7, anchor),
      ArrowUp: () => t.zoomBy(0.7, anchor), ArrowDown: () => t.zoomBy(1 / 0.7, anchor),
      a: () => t.panBy(-step), d: () => t.panBy(step), ArrowLeft: () => t.panBy(-step), ArrowRight: () => t.panBy(step),
    };
    const action = actions[ev.key.length === 1 ? ev.key.toLowerCase() : ev.key];
    if (action && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      ev.preventDefault();
      t.tooltip.hidden = true; // what it described has moved from under the pointer
      action();
    }
  }
}
