// While `kinetoscope view` imports, ingests and indexes its dataset: a progress bar from
// /api/progress, polled until the dataset is ready (then the viewer starts, no reload) or failed.
import { h } from "./dom";

export interface Progress { stage: string; done: number; total: number; message: string; error: string | null; ready: boolean; elapsed_s: number; }

const STAGES: Record<string, string> = { import: "importing the traces", ingest: "ingesting the sessions", index: "building the viewer index" };
const POLL_MS = 250;

/** The headline for `p`: the step of three and what it does, with done/total when known. */
export function stageText(p: Progress): string {
  const steps = Object.keys(STAGES);
  const step = steps.indexOf(p.stage);
  if (step < 0) return p.stage;
  const counted = p.total > 0 ? ` (${p.done} of ${p.total})` : "";
  return `Step ${step + 1} of ${steps.length}: ${STAGES[p.stage]}${counted}`;
}

/** The bar's value in [0, 1], or null while the stage's amount of work is unknown. */
export function stageFraction(p: Progress): number | null {
  return p.total > 0 ? Math.min(Math.max(p.done / p.total, 0), 1) : null;
}

/** Resolves once the dataset is ready, showing progress meanwhile; throws the preparation's error. */
export async function whenReady(): Promise<void> {
  let view: { bar: HTMLProgressElement; title: HTMLElement; note: HTMLElement } | null = null;
  for (;;) {
    const response = await fetch("/api/progress", { credentials: "same-origin" });
    if (!response.ok) throw new Error(`/api/progress: ${response.status} ${await response.text()}`);
    const p = (await response.json()) as Progress;
    if (p.ready) return;
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

function show(): { bar: HTMLProgressElement; title: HTMLElement; note: HTMLElement } {
  const bar = h("progress", { class: "prepare-bar", max: 1, "aria-label": "preparing the dataset" });
  const title = h("h2", { class: "prepare-stage" });
  const note = h("p", { class: "prepare-note muted" });
  document.body.replaceChildren(h("div", { class: "prepare", role: "status" }, title, bar, note));
  return { bar, title, note };
}
