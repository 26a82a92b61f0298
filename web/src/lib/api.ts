// Typed access to the viewer's JSON API. Every request counts toward the idle signal.

import type { EventId } from "./ids";

export type { EventId } from "./ids";

export interface Track { id: number; run: string; rank: number; pid: number; layer: string; tid: number; device: number; stream: number; events: number; lanes: number; name: string; session: string;
  /** Lanes the track needs with its Python frames hidden; 0 when it has none. */
  ops_lanes?: number; }
export interface CounterTrack {
  id: number; run: string; rank: number; name: string; unit: string; device: number; samples: number; min_value: number; max_value: number;
  /** The first and last sample's time (ns from the run start): samples may lie before the first event or after the last. */
  first_ts?: number; last_ts?: number;
}
export interface Warning { run: string; rank: number; session: string; file: string; where: string; kind: string; severity?: string; message: string; count: number; }
export interface Meta {
  t0_ns: string; span_ns: number; event_count: number; runs: string[];
  tracks: Track[]; counters: CounterTrack[]; warnings: Warning[];
  sessions: { run: string; rank: number; host: string; pid: number; world_size: number }[];
  /** Compare mode only: how BASE and NEW were named, and which of them this dataset is. */
  compare?: { base: string; new: string; side: "base" | "new" };
}
export interface WindowData {
  start_ns: number; end_ns: number; px_ns: number; bucket_ns: number; strings: string[]; truncated: boolean;
  slices: { id: EventId[]; track: number[]; lane: number[]; ts: number[]; dur: number[]; name: number[] };
  blocks: { track: number[]; lane: number[]; ts: number[]; end: number[]; count: number[]; busy: number[]; name: number[] };
}
export interface CounterData { start: number; end: number; series: Record<string, { ts: number[]; min: number[]; max: number[]; last: number[] }>; }
export interface Brief { id: EventId; track: number; lane: number; ts: number; dur: number; name: string; layer: string; hop?: number; ops_lane?: number; }
export interface Frame { name: string; file: string; line: number; }
export interface SourceLine { file: string; line: number; function: string; code: string; }
export interface KernelProvenance { kernel: string; post_grad_nodes: string[]; pre_grad_nodes: string[]; source: SourceLine[]; }
/** Compiled code (torch.compile) of an event's name in its session: a kernel, or a graph and the kernels it calls. */
export interface CompiledCode { kind: string; graph: string; files: string[]; kernels: KernelProvenance[]; }
export interface Details extends Brief {
  run: string; rank: number; fields: Record<string, unknown>; args: unknown; stack: Frame[]; provenance?: CompiledCode[];
}
export interface Chain { event: Brief | null; upstream: Brief[]; downstream: Brief[]; edges: { src: EventId; dst: EventId; kind: string }[]; }
export interface SearchHit { n: number; id: EventId; track: number; lane: number; ts: number; dur: number; name: string; rank: number; }
export interface SearchResult { query: string; total: number; offset: number; hits: SearchHit[]; }
export interface Matches { ids: EventId[]; truncated: boolean; }
export interface RangeSummary {
  start: number; end: number;
  top_ops: { name: string; kind: string; count: number; total_ns: number }[];
  top_kernels: { name: string; kind: string; count: number; total_ns: number }[];
  busy: { track: number; busy_ns: number; count: number }[];
}
/** A flamegraph tree (`/api/area`): node 0 is the whole selection; parents come before their children. */
export interface FlameNodes { parent: number[]; name: string[]; depth: number[]; count: number[]; total_ns: number[]; self_ns: number[]; }
export interface AreaRow { name: string; kind: string; run: string; rank: number; count: number; self_ns: number; total_ns: number; mean_ns: number; max_ns: number; }
export interface AreaSummary {
  start: number; end: number; tracks: number[];
  aggregate: { view: string; groups: number; rows: AreaRow[] };
  flame: { nodes: FlameNodes; pruned: number };
}
export interface Allocation { i: number; addr: number | string; size: number; alloc: number; free: number | null; stack_id: number; event_id: EventId; }
export interface Allocations { run: string; rank: number; device: number; end: number; origin?: string; allocations: Allocation[]; total_count: number; others: { ts: number[]; bytes: number[] }; }
export interface AllocSource { run: string; rank: number; device: number; count: number; largest_bytes: number; origin?: string; }
export interface MemorySeries { id: number; run: string; rank: number; name: string; device: number; ts: number[]; bytes: number[]; peak: { ts: number; bytes: number }; }
export interface SqlResult { columns: string[]; types: string[]; rows: unknown[][]; truncated: boolean; elapsed_ms: number; error?: string; }
/** One registered analysis (the same as `kinetoscope summary`): times in ns (points in time from the run start), sizes in bytes. */
export interface SummarySection { name: string; title: string; description: string; scope: string; columns: string[]; rows: Record<string, unknown>[]; }
export interface Summary { analyses: SummarySection[]; }
/** `start_ns`, `end_ns`: epoch ns, strings past 2^53 (as they are, but for a trace without an epoch). */
export interface FindingEvidence { event_id: EventId; name: string; start_ns: number | string; end_ns: number | string; link: string; }
/** One finding of `kinetoscope findings --json` (docs/findings.schema.json). */
export interface Finding {
  rule: string; title: string; severity: "info" | "low" | "medium" | "high"; run: string; rank: number; summary: string;
  seen: Record<string, unknown>; evidence: FindingEvidence[]; gain: { ns: number; basis: string }; remedy: string; docs: string;
}
export interface Findings { schema: string; version: number; findings: Finding[]; }

let pending = 0;
const idleWaiters: (() => void)[] = [];

export function busy(): () => void {
  pending++;
  document.documentElement.dataset.idle = "false";
  let done = false;
  return () => {
    if (done) return;
    done = true;
    pending--;
    if (pending === 0) requestAnimationFrame(() => requestAnimationFrame(() => {
      if (pending === 0) {
        document.documentElement.dataset.idle = "true";
        idleWaiters.splice(0).forEach((f) => f());
      }
    }));
  };
}

export function isIdle(): boolean {
  return pending === 0 && document.documentElement.dataset.idle === "true";
}

export class ApiError extends Error {}

export async function get<T>(path: string, params: Record<string, string | number> = {}, signal?: AbortSignal): Promise<T> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
  const done = busy();
  try {
    const response = await fetch(query ? `${path}?${query}` : path, { signal, credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) throw new ApiError(body.error ?? response.statusText);
    return body as T;
  } finally {
    done();
  }
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  const done = busy();
  try {
    const response = await fetch(path, { method: "POST", body: JSON.stringify(body), credentials: "same-origin",
      headers: { "Content-Type": "application/json" } });
    const data = await response.json();
    if (!response.ok) throw new ApiError(data.error ?? response.statusText);
    return data as T;
  } finally {
    done();
  }
}
