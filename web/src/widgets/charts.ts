// Small charts: horizontal bars as DOM (text stays text), and line charts on canvas.
import { h, sizedContext } from "../lib/dom";
import { axisTicks } from "../lib/format";
import { distinctLabels } from "../lib/labels";
import { canvasColors } from "../lib/theme";

export interface Bar { label: string; value: number; text: string; parts?: { value: number; cls: string; title: string }[]; }

/** What each colour of a stacked bar stands for. */
export interface LegendEntry { cls: string; label: string; }

export function barChart(bars: Bar[], title: string, legend: LegendEntry[] = []): HTMLElement {
  const max = Math.max(...bars.map((b) => b.value), 1);
  const labels = distinctLabels(bars.map((b) => b.label));
  return h("figure", { class: "bars" }, h("figcaption", {}, title),
    legend.length ? h("div", { class: "legend-row bar-legend" }, ...legend.map((l) => h("span", { class: "legend-item" },
      h("span", { class: `swatch bar ${l.cls}` }), l.label))) : null,
    ...bars.map((b, i) => h("div", { class: "bar-row", title: `${b.label}: ${b.text}` },
      h("span", { class: "bar-label", title: b.label }, labels[i]),
      h("span", { class: "bar-track" }, ...(b.parts ?? [{ value: b.value, cls: "", title: b.text }]).map((p) =>
        h("span", { class: `bar ${p.cls}`, style: `width:${((100 * p.value) / max).toFixed(2)}%`, title: p.title }))),
      h("span", { class: "bar-value" }, b.text))));
}

export interface LineSeries { label: string; ts: number[]; values: number[]; color: string; peak?: { ts: number; value: number; text: string }; }

export function lineChart(series: LineSeries[], opts: { title: string; span: number; format: (v: number) => string; height?: number }): HTMLElement {
  const canvas = h("canvas", { class: "line-chart" });
  const fig = h("figure", { class: "chart" }, h("figcaption", {}, opts.title), canvas,
    h("div", { class: "legend-row" }, ...series.map((s) => h("span", { class: "legend-item" }, h("span", { class: "swatch", style: `background:${s.color}` }), s.label,
      s.peak ? h("span", { class: "peak-label" }, ` peak ${s.peak.text}`) : null))));
  const draw = () => {
    const width = canvas.clientWidth || 600;
    const height = opts.height ?? 180;
    const ctx = sizedContext(canvas, width, height);
    const max = Math.max(...series.flatMap((s) => s.values), 1);
    const left = 70;
    const x = (t: number) => left + (t / Math.max(opts.span, 1)) * (width - left - 10);
    const y = (v: number) => height - 20 - (v / max) * (height - 30);
    ctx.font = "11px system-ui, sans-serif";
    const colors = canvasColors();
    ctx.fillStyle = colors.tick;
    for (const frac of [0, 0.5, 1]) {
      ctx.fillText(opts.format(max * frac), 2, y(max * frac) + 4);
      ctx.fillStyle = colors.gap;
      ctx.fillRect(left, y(max * frac), width - left, 1);
      ctx.fillStyle = colors.tick;
    }
    for (const t of axisTicks(0, opts.span, 6).ticks) ctx.fillText(t.label, x(t.ns), height - 5);
    for (const s of series) {
      ctx.strokeStyle = s.color;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      s.ts.forEach((t, i) => (i ? ctx.lineTo(x(t), y(s.values[i])) : ctx.moveTo(x(t), y(s.values[i]))));
      ctx.stroke();
      if (s.peak) {
        ctx.fillStyle = s.color;
        ctx.beginPath();
        ctx.arc(x(s.peak.ts), y(s.peak.value), 4, 0, 2 * Math.PI);
        ctx.fill();
        ctx.fillText(`▲ ${s.peak.text}`, Math.min(x(s.peak.ts) + 6, width - 90), Math.max(y(s.peak.value) - 6, 10));
      }
    }
  };
  new ResizeObserver(draw).observe(canvas);
  return fig;
}
