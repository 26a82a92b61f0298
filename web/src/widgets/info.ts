// Info page: how the dataset was made (versions, capture modes, clocks, files of each session) and what was lost.
import { get } from "../lib/api";
import { append, h, table } from "../lib/dom";
import { formatBytes, formatCount, formatDuration } from "../lib/format";

type Row = Record<string, unknown>;
export interface InfoFile { name: string; size_bytes: number; sha256: string; status: string; }
export interface InfoSession extends Row { run: string; rank: number; session: string; files: InfoFile[]; start_utc: string; stop_utc: string; profiled_ns: number | null; }
export interface Info {
  viewer_version: string; dataset: string; t0_ns: string; span_ns: number; sessions: InfoSession[]; warnings: Row[];
  damaged_files: Row[]; lost: { dropped_events: number; damaged_files: number; warnings: number; notes: number }; missing: string[];
}

/** A recorded value as text (counts with thousands separators, ids as they are); "", -1 and null read "not recorded". */
export function recorded(value: unknown, count = false): string {
  if (value === null || value === undefined || value === "" || value === -1) return "not recorded";
  return typeof value === "number" && count ? formatCount(value) : String(value);
}

const COUNT_FIELDS = new Set(["event_count", "dropped_events"]);

export class InfoPage {
  readonly root = h("div", { class: "page info-page" });

  constructor() {
    void this.load();
  }

  private async load(): Promise<void> {
    let info: Info;
    try {
      info = await get<Info>("/api/info");
    } catch (err) {
      append(this.root, h("p", { class: "error" }, (err as Error).message));
      return;
    }
    const lost = info.lost;
    append(this.root,
      h("section", { class: "cards" }, card("sessions", String(info.sessions.length)), card("dropped events", formatCount(lost.dropped_events)),
        card("damaged files", String(lost.damaged_files)), card("warnings", String(lost.warnings)), card("notes", String(lost.notes))),
      h("h2", {}, "Dataset"),
      table(["field", "value"], [["path", info.dataset], ["viewer (kinetoscope)", info.viewer_version],
        ["time origin (ns, CLOCK_REALTIME)", info.t0_ns], ["span shown", formatDuration(info.span_ns)]]),
      info.missing.length ? h("p", { class: "muted missing" }, `Not in this dataset: ${info.missing.join(", ")}.`) : null,
      h("h2", {}, "What was lost"), lostSection(info),
      h("h2", {}, "Sessions"), ...info.sessions.map(sessionSection));
  }
}

function lostSection(info: Info): HTMLElement {
  // each loss once: the warnings table's own row wins over the session's count or the file's status
  const warned = new Set(info.warnings.map((w) => `${String(w.rank)}:${String(w.kind)}:${String(w.file)}`));
  const warnedKind = new Set(info.warnings.map((w) => `${String(w.rank)}:${String(w.kind)}`));
  const dropped = info.sessions.filter((s) => Number(s.dropped_events ?? 0) > 0 && !warnedKind.has(`${s.rank}:dropped_events`))
    .map((s) => [`rank ${s.rank}`, "dropped_events", "warning", `${formatCount(Number(s.dropped_events))} events dropped at capture`, ""]);
  const warnings = info.warnings.map((w) => [`rank ${String(w.rank)}`, String(w.kind ?? ""), String(w.severity ?? "warning"),
    String(w.message ?? ""), [w.file, w.where].filter((x) => x).join(" · ")]);
  const damaged = info.damaged_files.filter((f) => !warned.has(`${String(f.rank)}:${String(f.status)}:${String(f.name)}`)).map((f) => [`rank ${String(f.rank)}`, String(f.status), "warning",
    `${String(f.name)} is ${String(f.status)}`, String(f.name)]);
  const rows = [...dropped, ...damaged, ...warnings];
  if (!rows.length) return h("p", { class: "muted" }, "Nothing: no dropped events, every file intact, no warnings.");
  return table(["rank", "kind", "severity", "message", "file"], rows);
}

const SESSION_FIELDS: [string, string][] = [
  ["state", "state"], ["host", "host"], ["instance", "instance"], ["pid", "pid"], ["local_rank", "local rank"],
  ["world_size", "world size"], ["backend", "backend"], ["modes", "capture modes (config)"], ["torch_version", "torch"],
  ["kinetoscope_version", "kinetoscope (capture)"], ["device_name", "devices"], ["device_memory", "device memory"], ["event_count", "events"],
  ["dropped_events", "dropped events"], ["path", "session directory"],
];

function sessionSection(s: InfoSession): HTMLElement {
  const fields = SESSION_FIELDS.filter(([key]) => key in s).map(([key, label]) => [label,
    key === "device_memory" ? deviceMemory(s[key]) : recorded(s[key], COUNT_FIELDS.has(key))]);
  const clocks = [["profiler start (UTC)", s.start_utc || "not recorded"], ["profiler stop (UTC)", s.stop_utc || "not recorded"],
    ["profiled", s.profiled_ns === null ? "not recorded" : formatDuration(s.profiled_ns)]];
  const files = s.files.map((f) => [f.name, f.size_bytes < 0 ? "missing" : formatBytes(f.size_bytes), f.status, f.sha256 ? "listed" : "not listed"]);
  return h("section", { class: "info-session", "data-rank": s.rank },
    h("h3", {}, `${s.run} · rank ${s.rank}`, h("span", { class: "muted" }, ` ${s.session}`)),
    h("div", { class: "grid2" },
      h("div", {}, h("h4", {}, "Versions and config"), table(["field", "value"], [...fields, ["CUDA / CUPTI", "not recorded by the dataset"]])),
      h("div", {}, h("h4", {}, "Clocks"), table(["field", "value"], clocks),
        h("h4", {}, `Files (${s.files.length})`), files.length ? table(["file", "size", "status", "manifest sha256"], files)
          : h("p", { class: "muted" }, "no files listed"))));
}

/** `{"0": 34089730048}` as "device 0: 31.7 GiB"; "not recorded" when empty or unreadable. */
export function deviceMemory(value: unknown): string {
  try {
    const parsed = JSON.parse(String(value ?? "{}")) as Record<string, number>;
    const parts = Object.entries(parsed).map(([device, bytes]) => `device ${device}: ${formatBytes(Number(bytes))}`);
    return parts.length ? parts.join(", ") : "not recorded";
  } catch {
    return "not recorded";
  }
}

function card(label: string, value: string): HTMLElement {
  return h("div", { class: "card" }, h("div", { class: "card-value" }, value), h("div", { class: "card-label" }, label));
}
