// Summary page: the registered analyses (those of `kinetoscope summary`), as charts and then as tables.
import type { Finding, FindingGroup, Findings, Meta, Summary, SummarySection } from "../lib/api";
import { get } from "../lib/api";
import { barChart } from "../widgets/charts";
import type { Bar } from "../widgets/charts";
import { append, h, inlineCode, table } from "../lib/dom";
import { formatBytes, formatCount, formatDuration, spanNs } from "../lib/format";
import type { RowTarget } from "../lib/rowlinks";
import { analysisTarget, targetLink } from "../lib/rowlinks";

type Row = Record<string, unknown>;
const TOP_BARS = 15;

export class SummaryPage {
  readonly root = h("div", { class: "page summary-page" });

  constructor(private readonly meta: Meta, private readonly open: (target: RowTarget) => void = () => undefined) {
    void this.load();
  }

  private async load(): Promise<void> {
    const findings = h("section", { class: "findings" }, h("h2", {}, "Findings"), h("p", { class: "muted" }, "running the rules…"));
    void this.loadFindings(findings);
    const s = await get<Summary>("/api/summary");
    const rows = (name: string): Row[] => s.analyses.find((a) => a.name === name)?.rows ?? [];
    append(this.root, this.cards(rows("overview"), rows("stragglers")), findings,
      h("section", { class: "grid2" }, stepChart(rows("overview")), deviceTimeChart(rows("temporal_breakdown")),
        topChart(rows("top_kernels"), "total_ns", "Top device kernels (all ranks)", "No device kernels in this profile."),
        topChart(rows("top_ops"), "self_ns", "Top framework ops by self time (all ranks)", "No framework ops in this profile."),
        overlapChart(rows("communication_overlap"))),
      h("h2", {}, "Analyses"), ...s.analyses.map((a) => sectionTable(a, this.open)));
  }

  /** The findings of `kinetoscope findings`, the largest estimated gain first; evidence opens the timeline. */
  private async loadFindings(section: HTMLElement): Promise<void> {
    let found: Findings;
    try {
      found = await get<Findings>("/api/findings");
    } catch (err) {
      section.replaceChildren(h("h2", {}, "Findings"), h("p", { class: "error" }, (err as Error).message));
      return;
    }
    const groups = found.groups;
    const counted = groups.length === found.findings.length ? `${groups.length}`
      : `${groups.length}, from ${found.findings.length} findings across ranks`;
    const title = `Findings (${counted}${groups.length ? ", largest estimated gain first" : ""})`;
    section.replaceChildren(h("h2", {}, title),
      groups.length ? h("ol", { class: "finding-list" }, ...groups.map((g) => findingItem(g, found.findings)))
        : h("p", { class: "muted" }, "No rule fired: nothing the rules know of costs time here (see docs/findings.md)."));
  }

  private cards(overview: Row[], stragglers: Row[]): HTMLElement {
    const straggler = stragglers.find((r) => r.straggler === true);
    return h("section", { class: "cards" },
      card("events", formatCount(this.meta.event_count)), card("ranks", String(overview.length || this.meta.sessions.length)),
      card("profiled time", formatDuration(this.meta.span_ns)), card("warnings", String(this.meta.warnings.filter((w) => w.severity !== "note").length)),
      straggler ? card("straggler", `rank ${String(straggler.rank)} · ${String(straggler.reason)}`) : null);
  }
}

function num(v: unknown): number {
  return typeof v === "number" ? v : Number(v ?? 0) || 0;
}

export function stepChart(overview: Row[]): HTMLElement {
  const withSteps = overview.filter((r) => num(r.steps) > 0);
  if (!withSteps.length) return h("p", { class: "empty" }, "No ProfilerStep#N annotations: profile with a schedule and prof.step() to get step times.");
  return barChart(withSteps.map((r) => ({ label: `rank ${String(r.rank)}`, value: num(r.step_mean_ns),
    text: `${formatDuration(num(r.step_mean_ns))} mean of ${String(r.steps)} step${num(r.steps) === 1 ? "" : "s"}` })), "Step time per rank (ProfilerStep#N)");
}

export function deviceTimeChart(breakdown: Row[]): HTMLElement {
  if (!breakdown.length) return h("p", { class: "empty" }, "No device activity: device time breakdown needs kernels.");
  const parts = (r: Row) => (["compute", "communication", "memory", "idle"] as const).map((k) => ({
    value: num(r[`${k}_ns`]), cls: k === "compute" ? "busy" : k === "idle" ? "idle" : k === "communication" ? "exposed" : "memory",
    title: `${k} ${formatDuration(num(r[`${k}_ns`]))}` }));
  return barChart(breakdown.map((r) => ({ label: `rank ${String(r.rank)}`, value: num(r.span_ns), parts: parts(r),
    text: `${num(r.compute_pct).toFixed(1)}% compute · ${num(r.idle_pct).toFixed(1)}% idle, of the device span` })),
  "Device span (its first to its last work, not the wall time): compute / communication / memory / idle",
  [{ cls: "busy", label: "compute" }, { cls: "exposed", label: "communication (not hidden by compute)" },
    { cls: "memory", label: "memory copies and sets" }, { cls: "idle", label: "idle" }]);
}

/** Sums each rank's top rows by name, largest first. */
export function topChart(rows: Row[], field: string, title: string, empty: string): HTMLElement {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  const byName = new Map<string, { ns: number; calls: number }>();
  for (const r of rows) {
    const seen = byName.get(String(r.name)) ?? { ns: 0, calls: 0 };
    byName.set(String(r.name), { ns: seen.ns + num(r[field]), calls: seen.calls + num(r.calls) });
  }
  const bars: Bar[] = [...byName].sort((a, b) => b[1].ns - a[1].ns).slice(0, TOP_BARS)
    .map(([name, v]) => ({ label: name, value: v.ns, text: `${formatDuration(v.ns)} · ${formatCount(v.calls)}×` }));
  return barChart(bars, title);
}

export function overlapChart(rows: Row[]): HTMLElement {
  const comm = rows.filter((r) => num(r.communication_ns) > 0);
  if (!comm.length) return h("p", { class: "empty" }, "No collective kernels found.");
  return barChart(comm.map((r) => {
    const total = num(r.communication_ns);
    const overlapped = Math.min(num(r.overlap_ns), total);
    return { label: `rank ${String(r.rank)}`, value: total, text: `${num(r.overlap_pct).toFixed(0)}% of ${formatDuration(total)} overlapped`,
      parts: [{ value: overlapped, cls: "busy", title: `overlapped with compute ${formatDuration(overlapped)}` },
        { value: total - overlapped, cls: "exposed", title: `exposed ${formatDuration(total - overlapped)}` }] };
  }), "Communication overlapped with compute",
  [{ cls: "busy", label: "overlapped with compute" }, { cls: "exposed", label: "exposed" }]);
}

/** An analysis as a table; a row that stands for events (an `example_id`, or a time) opens the timeline there
 * (where there is no timeline to open, as in the offline report, `open` is left out and so are the links). */
export function sectionTable(section: SummarySection, open?: (target: RowTarget) => void): HTMLElement {
  const targets = section.rows.map((r) => open ? analysisTarget(section.columns, r) : null);
  const linked = targets.some((t) => t !== null);
  const columns = section.columns.filter((c) => c !== "example_id");
  const cells = (r: Record<string, unknown>, i: number) => {
    const shown: (string | HTMLElement)[] = columns.map((c) => formatCell(c, r[c]));
    if (linked && open) shown.push(targets[i] ? targetAnchor(targets[i], open) : "");
    return shown;
  };
  const body = section.rows.length
    ? table(linked ? [...columns, "timeline"] : columns, section.rows.map(cells),
      linked && open ? (i) => { const t = targets[i]; if (t) open(t); } : undefined)
    : h("p", { class: "muted" }, "nothing to report");
  return h("section", { class: "analysis", "data-analysis": section.name }, h("h3", {}, section.title),
    h("p", { class: "muted" }, ...inlineCode(section.description)), body);
}

function targetAnchor(target: RowTarget, open: (target: RowTarget) => void): HTMLElement {
  const text = "id" in target ? `event ${target.id}` : `at ${formatDuration(target.ts)}`;
  return h("a", { href: targetLink(target), class: "row-link", title: "open the timeline here",
    onclick: (ev: Event) => { ev.preventDefault(); ev.stopPropagation(); open(target); } }, text);
}

export function formatCell(column: string, value: unknown): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value !== "number") return String(value);
  if (column.endsWith("_ts_ns")) return `at ${formatDuration(value)}`;
  if (column.endsWith("_ns")) return formatDuration(value);
  if (column.endsWith("_bytes")) return formatBytes(value);
  if (column.endsWith("_pct")) return `${value.toFixed(1)}%`;
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

export function card(label: string, value: string): HTMLElement {
  return h("div", { class: "card" }, h("div", { class: "card-value" }, value), h("div", { class: "card-label" }, label));
}

/** One group of findings (a rule and cause across ranks): where and how much, the worst rank's
 *  summary, the remedy, each rank's figure, and the evidence (the worst rank's first) that opens the timeline. */
function findingItem(g: FindingGroup, all: Finding[]): HTMLElement {
  const gain = g.gain.worst_ns ? `~${formatDuration(g.gain.worst_ns)}` : "no time";
  const worst = all[g.findings[0]];
  const evidence = g.evidence.slice(0, 3).map((e) => h("li", {},
    h("a", { href: e.link, class: "evidence", title: "open the timeline on this event" }, e.name || `event ${e.event_id}`),
    h("span", { class: "muted" }, ` rank ${e.rank} · at ${formatDuration(e.at_ns)} · ${formatDuration(spanNs(e.start_ns, e.end_ns))}`)));
  const members = g.findings.map((i) => all[i]);
  const byRank = members.length > 1 ? h("details", { class: "by-rank" }, h("summary", {}, `each of the ${members.length} ranks`),
    h("ul", {}, ...members.map((f) => h("li", {}, h("strong", {}, `rank ${f.rank}`), ` [${f.severity}] `, ...inlineCode(f.summary))))) : null;
  return h("li", { class: `finding severity-${g.severity}`, "data-rule": g.rule },
    h("div", { class: "finding-head" }, h("span", { class: `severity ${g.severity}` }, g.severity),
      h("strong", {}, g.title), h("span", { class: "muted" }, ` · ${g.headline} · ${g.rule}`), h("span", { class: "gain" }, gain)),
    h("p", {}, h("span", { class: "muted" }, `rank ${worst?.rank ?? g.ranks[0]}: `), ...inlineCode(g.summary)),
    h("p", { class: "remedy" }, h("span", { class: "muted" }, "remedy: "), ...inlineCode(g.remedy)),
    h("p", { class: "muted basis" }, `gain: ${g.gain.basis}`),
    byRank,
    evidence.length ? h("ul", { class: "evidence-list" }, ...evidence) : null);
}
