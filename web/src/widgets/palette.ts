// The command palette (Ctrl+K or Ctrl+Shift+P): a filterable list of every action the viewer has,
// each with its key; ↑ ↓ choose, Enter runs the chosen one, Esc closes. Keyboard only works.
import { h } from "../lib/dom";

export interface Action {
  /** What the action does, as listed ("Go to page: memory", "Go to track: rank 0 · stream 7"). */
  title: string;
  /** The key that does the same outside the palette, if any. */
  keys?: string;
  run(): void;
}

/** Whether `ev` opens the palette: Ctrl+K or Ctrl+Shift+P (⌘ on a Mac). */
export function isPaletteKey(ev: KeyboardEvent): boolean {
  const mod = ev.ctrlKey || ev.metaKey;
  const key = ev.key.toLowerCase();
  return mod && !ev.altKey && ((key === "k" && !ev.shiftKey) || (key === "p" && ev.shiftKey));
}

/** Whether `title` (lower case) holds `word`: a number only as a whole word ("5" is not in "105",
 *  "stream 84" nor "python5"), other words anywhere. */
function holds(title: string, word: string): boolean {
  if (!/^\d+$/.test(word)) return title.includes(word);
  return new RegExp(`(^|[^a-z0-9])${word}([^a-z0-9]|$)`).test(title);
}

/** The actions whose title holds every word of `text` (any case; numbers as whole numbers), those whose
 *  title starts with the text first, otherwise in their given order. */
export function filterActions(actions: Action[], text: string): Action[] {
  const t = text.trim().toLowerCase();
  const words = t.split(/\s+/).filter(Boolean);
  const hits = actions.filter((a) => words.every((w) => holds(a.title.toLowerCase(), w)));
  const starts = (a: Action) => Number(!a.title.toLowerCase().startsWith(t));
  return t ? hits.map((a, i) => ({ a, i })).sort((x, y) => starts(x.a) - starts(y.a) || x.i - y.i).map((x) => x.a) : hits;
}

/** At most this many actions are listed at once; typing narrows the rest down. */
export const SHOWN = 200;

export class Palette {
  private root: HTMLElement | null = null;
  private shown: Action[] = [];
  private chosen = 0;
  private readonly input = h("input", { type: "text", class: "palette-input", placeholder: "type a command or a track name…",
    "aria-label": "Command", role: "combobox", "aria-controls": "palette-list", "aria-expanded": "true" });
  private readonly list = h("ul", { class: "palette-list", id: "palette-list", role: "listbox" });
  private restore: HTMLElement | null = null;

  /** `actions` is asked each time the palette opens, so it lists the tracks and pages of that moment. */
  constructor(private readonly actions: () => Action[]) {
    this.input.addEventListener("input", () => this.render(0));
    this.input.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  get isOpen(): boolean {
    return this.root !== null;
  }

  toggle(): void {
    if (this.root) this.close();
    else this.open();
  }

  open(): void {
    if (this.root) return;
    this.restore = document.activeElement as HTMLElement | null;
    this.root = h("div", { class: "palette", role: "dialog", "aria-label": "Command palette" }, this.input, this.list);
    this.root.addEventListener("mousedown", (ev) => { if (ev.target === this.root) this.close(); });
    document.body.appendChild(this.root);
    this.input.value = "";
    this.render(0);
    this.input.focus();
  }

  close(): void {
    this.root?.remove();
    this.root = null;
    this.restore?.focus?.();
  }

  private onKey(ev: KeyboardEvent): void {
    ev.stopPropagation(); // the viewer's own keys (W A S D, M, ?) do nothing while the palette is open
    if (ev.key === "Escape") this.close();
    else if (ev.key === "ArrowDown" || ev.key === "ArrowUp") this.render(this.chosen + (ev.key === "ArrowDown" ? 1 : -1));
    else if (ev.key === "Enter") this.run(this.shown[this.chosen]);
    else if (isPaletteKey(ev)) this.close();
    else return;
    ev.preventDefault();
  }

  private run(action: Action | undefined): void {
    if (!action) return;
    this.close();
    action.run();
  }

  private render(chosen: number): void {
    const all = filterActions(this.actions(), this.input.value);
    this.shown = all.slice(0, SHOWN);
    this.chosen = this.shown.length ? (chosen + this.shown.length) % this.shown.length : 0;
    this.list.replaceChildren(...this.shown.map((a, i) => {
      const item = h("li", { role: "option", "aria-selected": String(i === this.chosen), class: i === this.chosen ? "chosen" : undefined,
        onmousedown: (ev: Event) => { ev.preventDefault(); this.run(a); } }, h("span", { class: "title" }, a.title),
      a.keys ? h("kbd", {}, a.keys) : null);
      return item;
    }));
    if (!this.shown.length) this.list.appendChild(h("li", { class: "muted" }, "no command matches"));
    else if (all.length > SHOWN) this.list.appendChild(h("li", { class: "muted" }, `${all.length - SHOWN} more: type to narrow`));
    this.list.querySelector(".chosen")?.scrollIntoView({ block: "nearest" });
  }
}
