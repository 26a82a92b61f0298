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
/** The flow kind of a launch (runtime call -> device work) and of an op's call (op -> runtime call). */
export interface FlowKinds { launch: string; op_to_call: string; }
export interface Meta {
  t0_ns: string; span_ns: number; event_count: number; runs: string[];
  tracks: Track[]; counters: CounterTrack[]; warnings: Warning[];
  sessions: { run: string; rank: number; host: string; pid: number; world_size: number }[];
  /** Whether the trace was recorded with Python stacks (with_stack=True), as the model decides it. */
  with_stacks: boolean;
  /** The flow kinds the front end draws apart (the model names them). */
  flow_kinds: FlowKinds;
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
/** `/api/area/pivot`: the area grouped by one column (`by`; for "arg", the args key `arg`), largest total first. */
export interface PivotRow { key: string; count: number; self_ns: number; total_ns: number; mean_ns: number; max_ns: number; }
export interface PivotResult { by: string; arg: string; view: string; groups: number; rows: PivotRow[]; }
export interface Allocation { i: number; addr: number | string; size: number; alloc: number; free: number | null; stack_id: number; event_id: EventId; }
export interface Allocations { run: string; rank: number; device: number; end: number; origin?: string; allocations: Allocation[]; total_count: number; others: { ts: number[]; bytes: number[] }; baseline_bytes?: number; }
export interface AllocSource { run: string; rank: number; device: number; count: number; largest_bytes: number; origin?: string; }
export interface MemorySeries { id: number; run: string; rank: number; name: string; device: number; ts: number[]; bytes: number[]; peak: { ts: number; bytes: number }; }
export interface SqlResult { columns: string[]; types: string[]; rows: unknown[][]; truncated: boolean; elapsed_ms: number; error?: string; }
/** One registered analysis (the same as `kinetoscope summary`): times in ns (points in time from the run start), sizes in bytes. */
export interface SummarySection { name: string; title: string; description: string; scope: string; columns: string[]; rows: Record<string, unknown>[]; }
export interface Summary { analyses: SummarySection[]; }
/** `start_ns`, `end_ns`: epoch ns, strings past 2^53 (as they are, but for a trace without an epoch); `at_ns`: from the dataset's first event. */
export interface FindingEvidence { event_id: EventId; name: string; start_ns: number | string; end_ns: number | string; link: string; at_ns: number; }
export type Severity = "info" | "low" | "medium" | "high";
/** One finding of `kinetoscope findings --json` (docs/findings.schema.json). */
export interface Finding {
  rule: string; title: string; severity: Severity; run: string; rank: number; summary: string;
  seen: Record<string, unknown>; evidence: FindingEvidence[]; gain: { ns: number; basis: string }; remedy: string; docs: string;
}
/** One rule and cause across the ranks of a run: its members in `findings`, the worst first. */
export interface FindingGroup {
  rule: string; title: string; severity: Severity; run: string; cause: string; ranks: number[]; ranks_in_run: number;
  headline: string; summary: string; gain: { worst_ns: number; min_ns: number; max_ns: number; basis: string };
  figure: { per: "step" | "window"; min_ns: number; max_ns: number }; share_pct: { min: number; max: number };
  evidence: (FindingEvidence & { run: string; rank: number })[]; remedy: string; docs: string; findings: number[];
}
export interface Findings { schema: string; version: number; groups: FindingGroup[]; findings: Finding[]; }

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

/** The server refused this page's session (none yet, or one of an earlier launch). */
export class SignInError extends ApiError {}

/** The link's one-time code was refused (used, expired or wrong): the server printed a new link. */
export class CodeRefused extends SignInError {}

// The session of this launch, from exchanging the link's one-time code (`signIn`). Kept in this
// origin's storage (its port included: no page of another server reads it) and sent as a header,
// never as a cookie, so reloads and deep links opened in this browser keep working.
const SESSION_KEY = "kinetoscope-session";
let memorySession: string | null = null;

function storedSession(): string | null {
  try {
    return localStorage.getItem(SESSION_KEY) ?? memorySession;
  } catch {
    return memorySession;
  }
}

function storeSession(session: string): void {
  memorySession = session;
  try {
    localStorage.setItem(SESSION_KEY, session);
  } catch {
    // storage disabled: this page keeps it in memory
  }
}

/** The header that proves this page's session (none before signing in). */
export function authHeaders(): Record<string, string> {
  const session = storedSession();
  return session ? { "X-Kinetoscope-Session": session } : {};
}

/** Exchanges `code` (the link's one-time code) for this launch's session, unless the stored one
 *  still works; with no code, an unknown session has the server print a new link. */
export async function signIn(code: string | null): Promise<void> {
  if (code) {
    const response = await fetch("/api/session", { method: "POST", body: JSON.stringify({ code }),
      headers: { "Content-Type": "application/json" }, credentials: "omit" });
    const body = await response.json() as { session?: string; error?: string };
    if (response.ok && body.session) return storeSession(body.session);
    if (await sessionWorks()) return;
    throw new CodeRefused(body.error ?? response.statusText);
  }
}

async function sessionWorks(): Promise<boolean> {
  if (!storedSession()) return false;
  return (await fetch("/api/progress", { headers: authHeaders(), credentials: "omit" })).ok;
}

/** Asks the server to print a new link in its terminal; the message to show. */
export async function askForLink(): Promise<string> {
  const response = await fetch("/api/session", { method: "POST", body: JSON.stringify({ code: "" }),
    headers: { "Content-Type": "application/json" }, credentials: "omit" });
  const body = await response.json().catch(() => ({})) as { error?: string };
  return body.error ?? response.statusText;
}

async function failure(response: Response, body: { error?: string; login?: boolean }): Promise<ApiError> {
  return body.login ? new SignInError(body.error ?? response.statusText) : new ApiError(body.error ?? response.statusText);
}

export async function get<T>(path: string, params: Record<string, string | number> = {}, signal?: AbortSignal): Promise<T> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
  const done = busy();
  try {
    const response = await fetch(query ? `${path}?${query}` : path, { signal, credentials: "omit", headers: authHeaders() });
    const body = await response.json();
    if (!response.ok) throw await failure(response, body);
    return body as T;
  } finally {
    done();
  }
}

let sqlWorkerAsked = false;

/** Has the server start its SQL worker, once a page, ahead of the first query (a fresh process that
 *  takes seconds to load): called when the Query tab or the SQL page opens. */
export function startSqlWorker(): void {
  if (sqlWorkerAsked) return;
  sqlWorkerAsked = true;
  post("/api/sql/start", {}).catch(() => { sqlWorkerAsked = false; }); // the query will start it
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  const done = busy();
  try {
    const response = await fetch(path, { method: "POST", body: JSON.stringify(body), credentials: "omit",
      headers: { "Content-Type": "application/json", ...authHeaders() } });
    const data = await response.json();
    if (!response.ok) throw await failure(response, data);
    return data as T;
  } finally {
    done();
  }
}
