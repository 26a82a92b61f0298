// Notes from ingest (such as "no accelerator on this host"): one line each, with the ranks they concern, dismissible.
import type { Warning } from "../lib/api";
import { append, h } from "../lib/dom";

const DISMISSED = "kinetoscope.dismissed-notes";

/** Notes (such as "no accelerator on this host") once each, with the ranks they concern, until dismissed. */
export function notesBanner(warnings: Warning[]): HTMLElement | null {
  const dismissed = dismissedNotes();
  const ranks = new Map<string, number[]>();
  for (const w of warnings) {
    if (w.severity === "note" && !dismissed.has(w.message)) ranks.set(w.message, [...(ranks.get(w.message) ?? []), w.rank]);
  }
  if (!ranks.size) return null;
  const box = h("div", { class: "banner note", role: "status" });
  for (const [message, on] of ranks) {
    const where = on.length > 1 ? `${on.length} ranks` : `rank ${on[0]}`;
    const close = h("button", { class: "dismiss", title: "Dismiss this note", "aria-label": "Dismiss this note" }, "×");
    const line = h("div", { class: "note-line" }, h("strong", {}, "note"), ` ${where}: ${message} `, close);
    close.addEventListener("click", (ev) => {
      ev.stopPropagation();
      dismissed.add(message);
      try {
        localStorage.setItem(DISMISSED, JSON.stringify([...dismissed]));
      } catch {
        // storage disabled: dismissed for this page only
      }
      line.remove();
      if (!box.childElementCount) box.remove();
    });
    append(box, line);
  }
  return box;
}

function dismissedNotes(): Set<string> {
  try {
    return new Set(JSON.parse(localStorage.getItem(DISMISSED) ?? "[]") as string[]);
  } catch {
    return new Set();
  }
}
