// Track rows and their grouping modes; pure, so each grouping is unit-tested.
import type { CounterTrack, Track, Warning } from "./api";

export type Grouping = "process" | "device" | "thread" | "rank" | "layer";
export const GROUPINGS: Grouping[] = ["process", "device", "thread", "rank", "layer"];

/** A device's busy share row: derived in the viewer from its streams' slices (`withBusyRows`). */
export interface BusyOf { run: string; rank: number; device: number; tracks: number[]; }

export interface Row {
  kind: "slice" | "counter" | "busy";
  id: number;
  label: string;
  lanes: number;
  warnings: Warning[];
  track?: Track;
  counter?: CounterTrack;
  busy?: BusyOf;
  /** Drawn without its Python frames (`trackcontrol.ts`): lanes from the index's `ev_ops`. */
  opsOnly?: boolean;
}

export interface Group { key: string; label: string; rows: Row[]; warnings: Warning[]; }

/** The dataset's name of a track (from thread_name metadata where the trace has it), else one from its keys. */
export function trackLabel(t: Track): string {
  if (t.name) return t.name;
  if (t.layer === "framework") return `thread ${t.tid}`;
  if (t.layer === "runtime") return t.device >= 0 ? `device ${t.device} · runtime` : `thread ${t.tid} · runtime`;
  if (t.layer === "device") return t.device >= 0 ? `device ${t.device} · stream ${t.stream}` : "device (no device id)";
  return `${t.layer} · ${t.tid}`;
}

/** A counter whose value never changes (all zero included): hidden unless asked for. */
export function isConstant(c: CounterTrack): boolean {
  return c.max_value === c.min_value;
}

/** Counters in a group: CPU utilisation, then host memory, then device memory; numbers in names in numeric order. */
export function counterOrder(a: CounterTrack, b: CounterTrack): number {
  const kind = (c: CounterTrack) => (c.device >= 0 ? 2 : c.unit === "%" ? 0 : 1);
  return a.run.localeCompare(b.run) || a.rank - b.rank || kind(a) - kind(b) || a.device - b.device
    || a.name.localeCompare(b.name, "en", { numeric: true });
}

function rankLabel(run: string, rank: number, multiRun: boolean): string {
  return multiRun ? `${run} · rank ${rank}` : `rank ${rank}`;
}

/** The sample file a host counter comes from, by the names the capture's samplers give their tracks
 *  (`capture/samplers.py`): CPU utilisation from `cpu_util.pb`, host and process memory from `host_mem.pb`;
 *  null for any other counter (device memory, counters of trace.json). */
export function sampleFile(c: { name?: string; unit?: string; device?: number }): string | null {
  if ((c.device ?? -1) >= 0 || !c.name) return null;
  if (/^CPU \d+ utilisation \(%\)$|^process CPU \(% of one core\)$/.test(c.name)) return "cpu_util.pb";
  if (/^host memory (total|used|available)$|^process resident memory$/.test(c.name)) return "host_mem.pb";
  return null;
}

/** Which tracks a warning concerns: by rank, and by the file's layer when the file name says it; a sample
 *  file's damage only the counters that file holds. */
export function warningApplies(w: Warning, t: { run: string; rank: number; layer?: string; device?: number; name?: string }): boolean {
  if (w.run !== t.run || w.rank !== t.rank) return false;
  const device = /^device_(\d+)/.exec(w.file);
  if (device) return t.layer === "device" && t.device === Number(device[1]);
  if (w.file === "ntrace.pb") return t.layer === "runtime";
  if (w.file === "trace.json") return t.layer === "framework";
  if (w.file === "cpu_util.pb" || w.file === "host_mem.pb") return t.layer === "counter" && sampleFile(t) === w.file;
  return false;
}

function groupKey(mode: Grouping, run: string, rank: number, pid: number, layer: string, tid: number,
                  device: number, stream: number, multiRun: boolean): [string, string] {
  const r = rankLabel(run, rank, multiRun);
  switch (mode) {
    case "process": return [`p:${run}:${rank}:${pid}`, `${r} · pid ${pid}`];
    case "rank": return [`r:${run}:${rank}`, r];
    case "device": return device >= 0 ? [`d:${device}`, `device ${device}`] : ["d:host", "host"];
    case "layer": return layer === "device" || (layer === "counter" && device >= 0) ? ["l:device", "device"] : ["l:cpu", "CPU"];
    case "thread":
      if (layer === "device") return [`t:${run}:${rank}:s${device}:${stream}`, `${r} · device ${device} · stream ${stream}`];
      if (tid < 0) return [`t:${run}:${rank}:${layer}:${device}`, `${r} · ${layer}${device >= 0 ? ` · device ${device}` : ""}`];
      return [`t:${run}:${rank}:${tid}`, `${r} · thread ${tid}`];
  }
}

export function groupTracks(mode: Grouping, tracks: Track[], counters: CounterTrack[], warnings: Warning[]): Group[] {
  const multiRun = new Set(tracks.map((t) => t.run)).size > 1;
  const groups = new Map<string, Group>();
  const add = (key: string, label: string, row: Row) => {
    if (!groups.has(key)) groups.set(key, { key, label, rows: [], warnings: [] });
    groups.get(key)!.rows.push(row);
  };
  // Track ids follow the dataset's display order (run, rank, session, then each track's sort): a thread's
  // framework rows, then its runtime calls and collectives, then the next thread. The GPU comes first:
  // each rank's device streams before its threads, so that they are on the first screen.
  const deviceFirst = (t: Track) => (t.layer === "device" ? 0 : 1);
  const sorted = [...tracks].sort((a, b) => a.run.localeCompare(b.run) || a.rank - b.rank || deviceFirst(a) - deviceFirst(b) || a.id - b.id);
  for (const t of sorted) {
    const [key, label] = groupKey(mode, t.run, t.rank, t.pid, t.layer, t.tid, t.device, t.stream, multiRun);
    const prefix = mode === "process" || mode === "rank" ? "" : `${rankLabel(t.run, t.rank, multiRun)} · `;
    add(key, label, { kind: "slice", id: t.id, label: prefix + trackLabel(t), lanes: Math.max(t.lanes, 1), track: t,
      warnings: warnings.filter((w) => warningApplies(w, t)) });
  }
  const pidOf = new Map(tracks.map((t) => [`${t.run}:${t.rank}`, t.pid]));
  for (const c of [...counters].sort(counterOrder)) {
    const pid = pidOf.get(`${c.run}:${c.rank}`) ?? -1;
    const [key, label] = groupKey(mode, c.run, c.rank, pid, "counter", -1, c.device, -1, multiRun);
    const prefix = mode === "process" || mode === "rank" ? "" : `${rankLabel(c.run, c.rank, multiRun)} · `;
    add(key, label, { kind: "counter", id: c.id, label: prefix + c.name, lanes: 1, counter: c,
      warnings: warnings.filter((w) => warningApplies(w, { run: c.run, rank: c.rank, layer: "counter", device: c.device, name: c.name })) });
  }
  for (const g of groups.values()) {
    const shown = new Set(g.rows.flatMap((r) => r.warnings));
    const ranks = new Set(g.rows.map((r) => `${(r.track ?? r.counter)!.run}:${(r.track ?? r.counter)!.rank}`));
    g.warnings = warnings.filter((w) => shown.has(w) || (ranks.has(`${w.run}:${w.rank}`) && mode !== "device" && mode !== "layer"));
  }
  return [...groups.values()];
}

/** The source (track, counter or device) a row shows: its run and rank. */
export function rowSource(r: Row): { run: string; rank: number } {
  return (r.track ?? r.counter ?? r.busy)!;
}

/** Each group with a "busy %" row before the first stream of each of its devices: per pixel, the share
 *  of time in which any stream of that device (of that rank) runs something. */
export function withBusyRows(groups: Group[]): Group[] {
  return groups.map((g) => {
    const devices = new Map<string, BusyOf>();
    for (const r of g.rows) {
      const t = r.track;
      if (r.kind !== "slice" || !t || t.layer !== "device" || t.device < 0) continue;
      const key = `${t.run}:${t.rank}:${t.device}`;
      if (!devices.has(key)) devices.set(key, { run: t.run, rank: t.rank, device: t.device, tracks: [] });
      devices.get(key)!.tracks.push(t.id);
    }
    if (!devices.size) return g;
    const multiRank = new Set([...devices.values()].map((d) => `${d.run}:${d.rank}`)).size > 1;
    const rows: Row[] = [];
    for (const r of g.rows) {
      const t = r.track;
      const busy = t && t.layer === "device" ? devices.get(`${t.run}:${t.rank}:${t.device}`) : undefined;
      if (busy && busy.tracks[0] === t!.id) {
        const label = `${multiRank ? `rank ${busy.rank} · ` : ""}device ${busy.device} · busy %`;
        rows.push({ kind: "busy", id: t!.id, label, lanes: 1, warnings: [], busy });
      }
      rows.push(r);
    }
    return { ...g, rows };
  });
}
