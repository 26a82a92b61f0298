// Search: the header box, the Search tab, and stepping through every hit a page at a time.
import type { EventId, SearchResult } from "../lib/api";
import { get } from "../lib/api";
import { append, clear, h, table } from "../lib/dom";
import { formatCount, formatDuration } from "../lib/format";

export const PAGE_SIZE = 200;

export interface SearchEvents {
  /** Shows hit `id` on the timeline. */
  show(id: EventId): void;
  /** The query whose matches the timeline highlights (empty: none). */
  queryChanged(q: string): void;
  trackName(track: number): string;
  /** Esc in the box: focus goes back to the timeline. */
  leave(): void;
  /** A query typed in the box has run (its hits or its error are in the panel). */
  ran(): void;
}

export class SearchPanel {
  readonly box = h("input", { type: "search", placeholder: "Search: name, \"a phrase\", /regex/, cat:kernel rank:1 dur>1ms, arg:\"Input Dims=[4096, 4096]\", … OR …",
    "aria-label": "Search events", title: "Enter: search, then next hit · Shift+Enter: previous · Esc: leave the box" });
  readonly panel = h("div", { class: "panel", "data-panel": "search" },
    h("p", { class: "muted" }, "Type a query in the search box and press Enter."));
  query = "";
  private total = 0;
  private cursor = -1;
  private pages = new Map<number, SearchResult["hits"]>();

  constructor(private readonly events: SearchEvents) {
    this.box.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  private onKey(ev: KeyboardEvent): void {
    if (ev.key === "Escape") {
      ev.preventDefault(); // the browser's own Esc would clear the box
      this.box.blur();
      this.events.leave();
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      if (this.box.value === this.query && this.total) void this.step(ev.shiftKey ? -1 : 1);
      else void this.run(this.box.value);
    }
  }

  get active(): boolean {
    return this.query !== "";
  }

  clear(): void {
    this.box.value = "";
    void this.run("", false);
  }

  /** Runs `q`; with `jump`, shows its first hit. */
  async run(q: string, jump = true): Promise<void> {
    this.query = q.trim();
    this.total = 0;
    this.cursor = -1;
    this.pages.clear();
    this.setError(null);
    this.events.queryChanged("");
    clear(this.panel);
    if (!this.query) return;
    try {
      await this.load(0);
      this.events.queryChanged(this.query);
      this.render(0);
    } catch (err) {
      this.setError((err as Error).message);
    }
    if (jump) this.events.ran();
    if (jump && this.total) await this.goTo(0);
  }

  /** The next (`+1`) or previous (`-1`) hit, wrapping around, across pages. */
  async step(delta: number): Promise<void> {
    if (!this.total) return;
    await this.goTo((((this.cursor + delta) % this.total) + this.total) % this.total);
  }

  private async goTo(k: number): Promise<void> {
    const page = Math.floor(k / PAGE_SIZE);
    await this.load(page);
    this.cursor = k;
    this.render(page);
    this.events.show(this.pages.get(page)![k - page * PAGE_SIZE].id);
  }

  private async load(page: number): Promise<void> {
    if (this.pages.has(page)) return;
    const result = await get<SearchResult>("/api/search", { q: this.query, offset: page * PAGE_SIZE, limit: PAGE_SIZE });
    this.total = result.total;
    this.pages.set(page, result.hits);
  }

  private setError(message: string | null): void {
    this.box.classList.toggle("invalid", message !== null);
    this.box.setAttribute("aria-invalid", String(message !== null));
    if (message === null) return;
    clear(this.panel);
    append(this.panel, h("p", { class: "search-error error", role: "alert" }, message),
      h("p", { class: "muted" }, "Terms: words, \"phrases\", /regex/, field:value (name cat layer rank run pid tid device stream id), dur>100us, arg:\"Key=value\" or arg:Key (an event argument); join alternatives with OR."));
    this.events.queryChanged("");
  }

  private render(page: number): void {
    const hits = this.pages.get(page) ?? [];
    clear(this.panel);
    const pages = Math.ceil(this.total / PAGE_SIZE);
    const at = this.cursor >= 0 ? `hit ${formatCount(this.cursor + 1)} of ${formatCount(this.total)}` : `${formatCount(this.total)} match(es)`;
    const flip = (to: number) => () => void this.load(to).then(() => this.render(to));
    append(this.panel, h("p", { class: "search-count" }, at),
      pages > 1 ? h("p", { class: "search-pages" },
        h("button", { disabled: page === 0, onclick: flip(page - 1) }, "‹ earlier"),
        ` hits ${formatCount(page * PAGE_SIZE + 1)}–${formatCount(page * PAGE_SIZE + hits.length)} `,
        h("button", { disabled: page >= pages - 1, onclick: flip(page + 1) }, "later ›")) : null,
      table(["#", "rank", "name", "track", "start", "duration"],
        hits.map((b) => [formatCount(b.n), String(b.rank), b.name, this.events.trackName(b.track), formatDuration(b.ts), formatDuration(b.dur)]),
        (i) => void this.goTo(page * PAGE_SIZE + i)));
    const current = this.cursor - page * PAGE_SIZE;
    this.panel.querySelectorAll("tbody tr")[current]?.classList.add("current");
  }
}
