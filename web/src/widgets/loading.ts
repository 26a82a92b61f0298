// While `kinetoscope view` imports, ingests and indexes its dataset: a progress bar from
// /api/progress, polled until the dataset is ready (then the viewer starts, no reload) or failed.
// When a preview of a big trace's first events is ready first, the viewer starts on it with a
// banner saying so and following the whole; once the whole is ready the page reloads (the URL,
// and with it the view, stays).
import { authHeaders, SignInError } from "../lib/api";
import { h } from "../lib/dom";
import { formatBytes, formatCount, formatDuration } from "../lib/format";

export interface Preview { trace: string; trace_bytes: number; ranks: number[]; events: number; span_ns: number; }
export interface Progress {
  stage: string; done: number; total: number; message: string; error: string | null; ready: boolean;
  elapsed_s: number; unit?: string; preview?: Preview | null;
}

const STAGES: Record<string, string> = { import: "importing the traces", ingest: "ingesting the sessions", index: "building the viewer index" };
const POLL_MS = 250;
const PREVIEW_POLL_MS = 1000;

/** The headline for `p`: the step of three and what it does, with done/total (or a per cent) when known. */
export function stageText(p: Progress): string {
  const steps = Object.keys(STAGES);
  const step = steps.indexOf(p.stage);
  if (step < 0) return p.stage;
  const counted = p.total <= 0 ? "" : p.unit === "%" ? ` (${Math.round((100 * p.done) / p.total)} %)` : ` (${p.done} of ${p.total})`;
  return `Step ${step + 1} of ${steps.length}: ${STAGES[p.stage]}${counted}`;
}

/** The bar's value in [0, 1], or null while the stage's amount of work is unknown. */
export function stageFraction(p: Progress): number | null {
  return p.total > 0 ? Math.min(Math.max(p.done / p.total, 0), 1) : null;
}

/** The banner's words for the preview `v`: what it holds and what it lacks. */
export function previewText(v: Preview): string {
  const ranks = v.ranks.length === 1 ? `rank ${v.ranks[0]}` : v.ranks.length ? `ranks ${v.ranks.join(", ")}` : "one trace";
  return `Preview: the first ${formatCount(v.events)} events of ${v.trace} (${formatBytes(v.trace_bytes)}, ${ranks}), ` +
    `over ${formatDuration(v.span_ns)}. A trace is not written in time order: tracks written later in the file are missing here.`;
}

/** Resolves once the dataset, or a preview of it, is ready, showing progress meanwhile; throws the preparation's error. */
export async function whenReady(): Promise<Progress> {
  let view: { bar: HTMLProgressElement; title: HTMLElement; note: HTMLElement } | null = null;
  for (;;) {
    const p = await progress();
    if (p.ready || p.preview) return p;
    if (p.error !== null) throw new Error(`preparing the dataset failed: ${p.error}`);
    view ??= show();
    const fraction = stageFraction(p);
    if (fraction === null) view.bar.removeAttribute("value");
    else view.bar.value = fraction;
    view.title.textContent = stageText(p);
    view.note.textContent = `${p.message} · ${p.elapsed_s.toFixed(0)} s`;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** While the viewer shows a preview: a banner under the header following the whole, and a reload once it is ready. */
export async function followWhole(first: Progress): Promise<void> {
  if (first.ready || !first.preview) return;
  const bar = h("progress", { class: "preview-bar", max: 1, "aria-label": "preparing the whole trace" });
  const state = h("span", { class: "preview-state" });
  const banner = h("div", { class: "banner preview", role: "status", "data-preview": "true" },
    h("span", { class: "preview-what" }, previewText(first.preview)), h("span", { class: "preview-whole" }, bar, state));
  const header = document.querySelector("header");
  if (header) header.after(banner);
  else document.body.prepend(banner);
  for (let p = first; ; p = await progress()) {
    if (p.ready) { location.reload(); return; }
    if (p.error !== null) { state.textContent = `The whole trace could not be prepared: ${p.error}`; bar.remove(); return; }
    const fraction = stageFraction(p);
    if (fraction === null) bar.removeAttribute("value");
    else bar.value = fraction;
    state.textContent = `The whole trace is loading: ${stageText(p)} · ${p.elapsed_s.toFixed(0)} s`;
    await new Promise((resolve) => setTimeout(resolve, PREVIEW_POLL_MS));
  }
}

async function progress(): Promise<Progress> {
  const response = await fetch("/api/progress", { credentials: "omit", headers: authHeaders() });
  if (response.status === 401) throw new SignInError(((await response.json()) as { error?: string }).error ?? "sign in");
  if (!response.ok) throw new Error(`/api/progress: ${response.status} ${await response.text()}`);
  return (await response.json()) as Progress;
}

function show(): { bar: HTMLProgressElement; title: HTMLElement; note: HTMLElement } {
  const bar = h("progress", { class: "prepare-bar", max: 1, "aria-label": "preparing the dataset" });
  const title = h("h2", { class: "prepare-stage" });
  const note = h("p", { class: "prepare-note muted" });
  document.body.replaceChildren(h("div", { class: "prepare", role: "status" }, title, bar, note));
  return { bar, title, note };
}
