// The offline report (`kinetoscope report`): the Summary page's charts, the findings and every
// analysis, from data embedded in the page itself. No request leaves the page; every string from a
// trace reaches the DOM as text.
import type { Finding, Findings, Summary, SummarySection } from "./lib/api";
import { append, h, inlineCode } from "./lib/dom";
import { formatCount, formatDuration, spanNs } from "./lib/format";
import { card, deviceTimeChart, overlapChart, sectionTable, stepChart, topChart } from "./pages/summary";

type Row = Record<string, unknown>;

export interface ReportData {
  title: string; generated: string; version: string; answer: string; t0_ns: string;
  facts: { events: number; ranks: number; span_ns: number; warnings: number };
  summary: Summary; findings: Findings;
}

export function reportPage(data: ReportData): HTMLElement {
  const rows = (name: string): Row[] => data.summary.analyses.find((a) => a.name === name)?.rows ?? [];
  const parts: [string, string, HTMLElement][] = [
    ["answer", "The answer", h("pre", { class: "answer" }, data.answer)],
    ["findings", `Findings (${data.findings.findings.length})`, findingList(data.findings.findings, data.t0_ns)],
    ["charts", "Charts", h("div", { class: "grid2" }, stepChart(rows("overview")), deviceTimeChart(rows("temporal_breakdown")),
      topChart(rows("top_kernels"), "total_ns", "Top device kernels (all ranks)", "No device kernels in this profile."),
      topChart(rows("top_ops"), "self_ns", "Top framework ops by self time (all ranks)", "No framework ops in this profile."),
      overlapChart(rows("communication_overlap")))],
    ["analyses", `Analyses (${data.summary.analyses.length})`, h("div", {}, ...data.summary.analyses.map(analysis))],
  ];
  return h("main", { class: "page summary-page report" },
    h("h1", {}, data.title), h("p", { class: "muted" }, `kinetoscope ${data.version} · ${data.generated}`),
    h("section", { class: "cards" }, card("events", formatCount(data.facts.events)), card("ranks", String(data.facts.ranks)),
      card("profiled time", formatDuration(data.facts.span_ns)), card("warnings", String(data.facts.warnings))),
    h("nav", { class: "toc" }, h("strong", {}, "Contents: "), ...parts.map(([id, title]) => h("a", { href: `#${id}` }, title))),
    ...parts.map(([id, title, body]) => h("details", { id, open: true }, h("summary", {}, h("h2", {}, title)), body)));
}

function analysis(section: SummarySection): HTMLElement {
  return h("details", { class: "analysis-fold", open: section.rows.length > 0 },
    h("summary", {}, `${section.title}${section.rows.length ? "" : " (no data)"}`), sectionTable(section));
}

function findingList(findings: Finding[], t0: string): HTMLElement {
  if (!findings.length) return h("p", { class: "muted" }, "No rule fired: nothing the rules know of costs time here.");
  return h("ol", { class: "finding-list" }, ...findings.map((f) => h("li", { class: `finding severity-${f.severity}`, "data-rule": f.rule },
    h("div", { class: "finding-head" }, h("span", { class: `severity ${f.severity}` }, f.severity), h("strong", {}, f.title),
      h("span", { class: "muted" }, ` · rank ${String(f.rank)} · ${f.rule}`),
      h("span", { class: "gain" }, f.gain.ns ? `~${formatDuration(f.gain.ns)}` : "no time")),
    h("p", {}, ...inlineCode(f.summary)),
    h("p", { class: "remedy" }, h("span", { class: "muted" }, "remedy: "), ...inlineCode(f.remedy)),
    f.evidence.length ? h("ul", { class: "evidence-list" }, ...f.evidence.slice(0, 3).map((e) => h("li", {},
      h("code", {}, e.name || `event ${String(e.event_id)}`),
      h("span", { class: "muted" }, ` at ${formatDuration(spanNs(t0, e.start_ns))} for ${formatDuration(spanNs(e.start_ns, e.end_ns))}`)))) : null)));
}

const source = document.getElementById("report-data");
if (source?.textContent) {
  append(document.body, reportPage(JSON.parse(source.textContent) as ReportData));
  document.documentElement.dataset.idle = "true";
}
