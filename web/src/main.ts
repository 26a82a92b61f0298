// The viewer's shell: navigation, deep links, and the timeline's side panels.
import type { Brief, Chain, CompiledCode, Details, EventId, Meta } from "./lib/api";
import { askForLink, busy, CodeRefused, get, isIdle, signIn, SignInError, startSqlWorker } from "./lib/api";
import { append, clear, h, table } from "./lib/dom";
import { formatCount, formatDuration } from "./lib/format";
import type { LinkState, Page } from "./lib/link";
import { formatLink, parseLink, PAGES, withoutCode } from "./lib/link";
import type { Mark } from "./lib/marks";
import { addMark, formatMarks, markRows, marksDocument, parseMarks } from "./lib/marks";
import { ComparePage } from "./pages/comparepage";
import { InfoPage } from "./widgets/info";
import { followWhole, whenReady } from "./widgets/loading";
import { MemoryPage } from "./pages/memory";
import type { PaneSize } from "./widgets/panes";
import { clampWidth, defaultSideWidth, dragHandle, loadPane, savePane } from "./widgets/panes";
import { provenanceRows } from "./widgets/provenance";
import type { RowTarget } from "./lib/rowlinks";
import { AROUND_NS } from "./lib/rowlinks";
import { SearchPanel } from "./widgets/searchpanel";
import { SqlPage } from "./pages/sqlpage";
import { SummaryPage } from "./pages/summary";
import type { Theme } from "./lib/theme";
import { applyTheme, currentTheme } from "./lib/theme";
import { AreaPanel } from "./widgets/areapanel";
import { formatArea, parseArea } from "./lib/selection";
import { flowHop, neighbour, flowHops, nextAlternative } from "./lib/navigation";
import { formatLayout, parseLayout } from "./timeline/trackcontrol";
import type { Action } from "./widgets/palette";
import { isPaletteKey, Palette } from "./widgets/palette";
import type { PinnedRow } from "./timeline/timeline";
import { Timeline } from "./timeline/timeline";
import type { CollectiveInstance } from "./timeline/collectivelinks";
import { collectivePanel, instanceName, isCollective } from "./timeline/collectivelinks";
import { collectiveShifts } from "./lib/clocks";
import { GROUPINGS, trackLabel } from "./lib/tracks";
import { formatCounterDisplays, setCounterDisplays } from "./timeline/counters";
import { argRows, linkedId, orderedFields } from "./widgets/details";
import type { DrawerTab } from "./widgets/drawer";
import { Drawer } from "./widgets/drawer";
import { PivotPanel } from "./widgets/pivotpanel";
import { QueryPanel } from "./widgets/querypanel";
import { isEventId } from "./lib/ids";

declare global {
  interface Window { kinetoscope: { idle: () => boolean; app?: App } }
}

type SideTab = "details" | "dependencies" | "marks";
type Tab = SideTab | DrawerTab;

// Every key the viewer answers, for the help overlay (?) and docs/viewer.md.
export const KEYS: [string, string][] = [
  ["W S, ↑ ↓, Ctrl+wheel", "zoom in / out around the pointer"],
  ["A D, ← →, Shift+wheel", "pan"],
  ["F", "zoom to the selected event"],
  [". ,", "next / previous slice on the selected slice's track and lane"],
  ["] [", "follow the flows one hop: to the launched call or kernel / back to its launch (Dependencies tab)"],
  ["M", "mark the time under the pointer (or the selected event's start)"],
  ["/", "search"],
  ["Enter, Shift+Enter", "next / previous search hit (in the search box)"],
  ["Esc", "clear the range selection, then the search; leave the search box"],
  ["Shift+drag", "select an area: the time range × the tracks crossed (tick a track's box to add or remove it)"],
  ["drag on the axis", "select a time range over every track"],
  ["drag the drawer's top edge", "resize the drawer (Area, Search, Query, Pivot); click its open tab to fold it"],
  ["click a table's header", "sort the drawer's and the SQL page's tables by that column (again: the other way)"],
  ["click a flamegraph frame", "zoom into it and list only its name; the bottom bar zooms out"],
  ["hover a track name", "pin it to the top or × hide it; the toolbar filters, finds and limits lanes"],
  ["drag a track name / a group header", "move the track within its group, or the whole group (the order stays in the link); hold it at the top or bottom edge to scroll"],
  ["click a counter's mode / scale button", "cycle its display (step, line, rate) and scale (auto, log, lin); kept in the link"],
  ["click parent_id, op_id, launch_id", "select that event (Details tab)"],
  ["Tab, Enter, Space", "move between and open headers, rows and hits"],
  ["Ctrl+K, Ctrl+Shift+P", "command palette: every action (pages, theme, marks, tracks…), filtered as you type; Enter runs, Esc closes"],
  ["?", "show or hide this list"],
];

class App {
  private state: LinkState;
  private readonly timeline: Timeline;
  private readonly pages = new Map<Page, HTMLElement>();
  private readonly nav = h("nav", { class: "tabs" });
  private readonly main = h("main");
  private readonly side = h("aside", { class: "side" });
  private readonly sideBody = h("div", { class: "side-body" });
  private readonly sideTabs = h("div", { class: "side-tabs" });
  private sideTab: SideTab = "details";
  private panels: Record<SideTab, HTMLElement> = {
    details: h("div", { class: "panel", "data-panel": "details" }, h("p", { class: "muted" }, "Click an event on the timeline to see its details.")),
    dependencies: h("div", { class: "panel", "data-panel": "dependencies" }, h("p", { class: "muted" }, "Select an event with flows to follow its dependency chain.")),
    marks: h("div", { class: "panel", "data-panel": "marks" }),
  };
  private readonly selectionPanel = h("div", { class: "panel", "data-panel": "selection" }, h("p", { class: "muted" }, "Shift+drag on the timeline to select an area (or drag on the time axis for a range over every track)."));
  private readonly drawer: Drawer;
  private readonly query: QueryPanel;
  private readonly pivot: PivotPanel;
  private marks: Mark[] = [];
  private help: HTMLElement | null = null;
  private urlTimer = 0;
  private urlWait: (() => void) | null = null;
  private readonly search: SearchPanel;
  private areaPanel!: AreaPanel;
  private chain: Chain | null = null;
  private readonly palette = new Palette(() => this.actions());
  private themeToggle: HTMLElement | null = null;
  /** The events the last `]` or `[` chose among, for cycling through them on repeat. */
  private lastHop: { dir: "down" | "up"; alternatives: Brief[] } | null = null;

  constructor(private readonly meta: Meta) {
    this.state = parseLink(location.search);
    setCounterDisplays(this.state.cmode);
    this.timeline = new Timeline(meta, {
      select: (id) => void this.select(id, false, id === undefined ? undefined : "details"),
      range: (start, end, tracks) => void this.summariseRange(start, end, tracks),
      viewChanged: () => this.scheduleUrl(),
      clocksChanged: () => { this.state.clocks = this.timeline.clocks.aligned ? "1" : "0"; if (this.state.sel !== undefined) void this.select(this.state.sel); },
      pinnedRow: (row) => this.showPinnedRow(row),
    });
    this.search = new SearchPanel({
      show: (id) => { this.toTimeline(); void this.select(id, "pan", "search"); },
      queryChanged: (q) => { this.state.q = q || undefined; this.scheduleUrl(); this.timeline.setMatches(q); },
      trackName: (id) => this.trackName(id),
      leave: () => this.timeline.focus(),
      ran: () => { this.toTimeline(); this.showSide("search"); },
    });
    this.query = new QueryPanel({
      open: (t) => this.openTarget("ts" in t ? { ts: t.ts - Number(BigInt(this.meta.t0_ns || "0")) } : t),
      pivot: (result) => { this.pivot.setQuery(result); this.drawer.show("pivot"); },
      pin: (result) => this.timeline.pin(result),
    });
    this.pivot = new PivotPanel((id) => this.trackName(id));
    this.drawer = new Drawer({ selection: this.selectionPanel, search: this.search.panel, query: this.query.panel, pivot: this.pivot.panel },
      () => this.timeline.requestDraw());
    this.drawer.onShow = (tab) => {
      if (tab === "pivot") void this.pivot.render();
      if (tab === "query") startSqlWorker();
    };
    window.addEventListener("keydown", (ev) => this.onKey(ev));
    const header = h("header", {}, h("span", { class: "brand" }, "kinetoscope"), this.nav, this.search.box,
      h("span", { class: "meta muted" }, `${formatCount(meta.event_count)} events · ${meta.sessions.length} rank(s) · ${formatDuration(meta.span_ns)}`),
      (this.themeToggle = this.themeButton()));
    for (const tab of Object.keys(this.panels) as SideTab[]) {
      append(this.sideTabs, h("button", { "data-tab": tab, onclick: () => this.showSide(tab) }, tab[0].toUpperCase() + tab.slice(1)));
    }
    this.buildSidePane();
    this.pages.set("timeline", h("div", { class: "page timeline-page" }, h("div", { class: "tl-row" }, this.timeline.root, this.side), this.drawer.root));
    document.body.replaceChildren(header, this.main);
    for (const page of meta.compare ? [...PAGES, "compare" as Page] : PAGES) {
      append(this.nav, h("a", { href: "#", "data-page": page, onclick: (ev: Event) => { ev.preventDefault(); this.go(page); } },
        page[0].toUpperCase() + page.slice(1)));
    }
    this.showSide("details");
    this.areaPanel = new AreaPanel(this.selectionPanel, (id) => this.trackName(id));
    this.setMarks(parseMarks(this.state.marks), false);
    this.timeline.setTrackLayout(parseLayout(this.state));
    this.timeline.setGrouping(this.state.group);
    if (this.state.clocks) this.timeline.setClocksAligned(this.state.clocks === "1");
    if (this.state.calign) void this.restoreCollectiveAlignment(this.state.calign);
    if (this.state.start !== undefined && this.state.end !== undefined) this.timeline.setViewport(this.state.start, this.state.end);
    this.go(this.state.page === "compare" && !meta.compare ? "timeline" : this.state.page, false);
    if (this.state.sel !== undefined) void this.select(this.state.sel, false);
    const area = parseArea(this.state.area);
    if (area) {
      this.timeline.setArea(area);
      void this.summariseRange(area.start, area.end, area.tracks);
    }
    if (this.state.q) {
      this.search.box.value = this.state.q;
      void this.search.run(this.state.q, false);
    }
    window.addEventListener("popstate", () => location.reload());
  }

  /** ☾ / ☀: the other theme, remembered in this browser; the canvases are drawn again in its colours. */
  private themeButton(): HTMLElement {
    const button = h("button", { class: "theme-toggle" });
    const show = (theme: Theme) => {
      button.textContent = theme === "dark" ? "☀" : "☾";
      button.title = theme === "dark" ? "Light theme" : "Dark theme";
      button.setAttribute("aria-label", button.title);
    };
    button.addEventListener("click", () => {
      const next: Theme = currentTheme() === "dark" ? "light" : "dark";
      applyTheme(next, true);
      show(next);
      this.timeline.requestDraw();
    });
    show(currentTheme());
    return button;
  }

  private toTimeline(): void {
    if (this.state.page !== "timeline") this.go("timeline");
  }

  /** The side panel: resizable from its left edge, foldable to a strip, its size remembered. */
  private buildSidePane(): void {
    let size: PaneSize = loadPane("side", defaultSideWidth(window.innerWidth));
    const apply = () => {
      this.side.style.width = size.collapsed ? "" : `${size.width}px`;
      this.side.classList.toggle("folded", size.collapsed);
      fold.textContent = size.collapsed ? "«" : "»";
      fold.title = size.collapsed ? "Show the side panel" : "Fold the side panel";
    };
    const toggle = () => { size = { ...size, collapsed: !size.collapsed }; savePane("side", size); apply(); };
    const fold = h("button", { class: "fold-side", onclick: toggle });
    const handle = h("div", { class: "side-resize", title: "Drag to resize the side panel; double-click to fold it" });
    dragHandle(handle, -1, { start: () => size.width, fold: toggle, end: () => savePane("side", size),
      resize: (w) => { size = { width: clampWidth(w, 220, window.innerWidth * 0.6), collapsed: false }; apply(); } });
    append(this.sideTabs, fold);
    append(this.side, handle, this.sideTabs, this.sideBody);
    apply();
  }

  go(page: Page, push = true): void {
    this.state.page = page;
    if (!this.pages.has(page)) {
      const built = page === "compare" ? new ComparePage(this.meta).root
        : page === "memory" ? new MemoryPage(this.meta, (run, rank, ts) => void this.jumpToOp(run, rank, ts),
          (ts) => this.openTarget({ ts })).root
          : page === "summary" ? new SummaryPage(this.meta, (t) => this.openTarget(t)).root
            : page === "info" ? new InfoPage().root : this.sqlPage().root;
      this.pages.set(page, built);
    }
    this.main.replaceChildren(this.pages.get(page)!);
    for (const a of this.nav.querySelectorAll("a")) a.classList.toggle("active", a.dataset.page === page);
    if (page === "timeline") this.timeline.requestDraw();
    if (push) history.pushState(null, "", this.link());
  }

  /** The timeline on an analysis row's event, or around the time it names. */
  private openTarget(target: RowTarget): void {
    if ("id" in target) {
      this.go("timeline");
      void this.select(target.id, true);
      return;
    }
    this.timeline.setViewport(Math.max(target.ts - AROUND_NS, 0), target.ts + AROUND_NS);
    this.go("timeline");
  }

  private sqlPage(): SqlPage {
    return new SqlPage({
      ran: (q) => { this.state.sql = q; this.scheduleUrl(); },
      openEvent: (id) => { this.go("timeline"); void this.select(id, true); },
      openTime: (tsNs) => {
        this.go("timeline");
        const at = tsNs - Number(BigInt(this.meta.t0_ns || "0"));
        const span = Math.max((this.timeline.vp.end - this.timeline.vp.start) / 10, 10_000);
        this.timeline.setViewport(at - span / 2, at + span / 2);
      },
    }, this.state.sql);
  }

  private link(): string {
    const vp = this.timeline.vp;
    return formatLink({ ...this.state, start: vp.start, end: vp.end, group: this.timeline.grouping, ...formatLayout(this.timeline.trackLayout),
      cmode: formatCounterDisplays() },
      location.search);
  }

  private scheduleUrl(): void {
    window.clearTimeout(this.urlTimer);
    this.urlWait?.();
    const done = busy();
    this.urlWait = done;
    this.urlTimer = window.setTimeout(() => {
      history.replaceState(null, "", this.link());
      done();
    }, 250);
  }

  private showSide(tab: Tab): void {
    if (tab === "search" || tab === "selection" || tab === "query" || tab === "pivot") {
      this.drawer.show(tab);
      return;
    }
    this.sideTab = tab;
    this.sideBody.replaceChildren(this.panels[tab]);
    for (const b of this.sideTabs.querySelectorAll("button")) b.classList.toggle("active", b.dataset.tab === tab);
  }

  private trackName(id: number): string {
    const t = this.meta.tracks.find((x) => x.id === id);
    return t ? `rank ${t.rank} · ${trackLabel(t)}` : `track ${id}`;
  }

  /** Selects an event; `reveal`: zoom to it (true), pan to it at the present zoom ("pan", search stepping)
   *  or only scroll to its track (false). */
  async select(id: EventId | undefined, reveal: boolean | "pan" = false, tab?: Tab): Promise<void> {
    this.state.sel = id;
    this.scheduleUrl();
    if (id === undefined) {
      this.chain = null;
      this.timeline.setSelection(null, null);
      return;
    }
    const [raw, rawChain] = await Promise.all([get<Details>(`/api/event/${id}`), get<Chain>(`/api/flows/${id}`)]);
    const details = this.timeline.clocks.brief(raw);
    const chain = this.timeline.clocks.chain(rawChain);
    this.chain = chain;
    this.timeline.setSelection(details, chain);
    if (reveal === "pan") this.timeline.panTo(details);
    else if (reveal) this.timeline.reveal(details);
    else this.timeline.reveal(details, this.state.start === undefined);
    this.renderDetails(details);
    this.renderChain(chain);
    void this.linkCollective(raw);
    if (tab === "search") return; // search stepping: the hits stay in the drawer, the side keeps its tab
    this.showSide(tab ?? "details");
  }

  /** The selected collective's instance on every rank: outlined on the timeline and listed in the details. */
  private async linkCollective(d: Details): Promise<void> {
    if (!isCollective(d)) {
      this.timeline.setLinked([]);
      return;
    }
    const inst = await get<CollectiveInstance>(`/api/collective/${d.id}`);
    if (this.state.sel !== d.id) return; // another event was selected meanwhile
    this.timeline.setLinked(inst.ranks.map((r) => r.id));
    const panel = collectivePanel(inst, this.timeline.clocks, {
      select: (id) => void this.select(id, true),
      align: (by) => this.alignOnCollective(inst, by),
    });
    this.panels.details.querySelector(".collective-links")?.remove(); // an earlier answer for the same event
    const where = this.panels.details.querySelector("p.muted"); // under the event's name and place
    if (where) where.after(panel);
    else append(this.panels.details, panel);
  }

  /** "Align ranks on this collective" (by its rows' starts or ends), or back to the clocks (null). */
  private alignOnCollective(inst: CollectiveInstance, by: "start" | "end" | null): void {
    const anchor = inst.ranks.find((r) => r.id === inst.event_id) ?? inst.ranks[0];
    this.timeline.clocks.collective = by && anchor ? { id: inst.event_id, by, label: `${instanceName(inst)} ${by}s`,
      shifts: collectiveShifts(inst.ranks, anchor, by) } : null;
    this.state.calign = by ? `${inst.event_id},${by}` : undefined;
    this.timeline.refreshClocks();
  }

  private async restoreCollectiveAlignment(text: string): Promise<void> {
    const [id, by] = text.split(",");
    if (!/^\d+$/.test(id) || (by !== "start" && by !== "end")) return;
    const inst = await get<CollectiveInstance>(`/api/collective/${id}`);
    if (inst.ranks.length) this.alignOnCollective(inst, by);
  }

  /** `.` / `,`: the next or previous slice on the selected one's track and lane. */
  private async step(dir: "next" | "prev"): Promise<void> {
    const at = this.timeline.selected;
    if (this.state.page !== "timeline" || !at) return;
    const next = await neighbour(at.id, dir);
    if (!next) return;
    const found = this.timeline.clocks.brief(next);
    await this.select(found.id, false, this.sideTab === "dependencies" ? "dependencies" : undefined);
    this.timeline.panTo(found);
  }

  /** `]` / `[`: one hop along the flows, downstream or upstream, with the Dependencies tab open: the
   *  server's first choice (a call that launched device work before one that did not). Where the event
   *  reached leads no further that way, the same key cycles through the other events of the last hop. */
  private async hop(dir: "down" | "up"): Promise<void> {
    if (this.state.page !== "timeline") return;
    const here = this.timeline.selected?.id;
    const last = this.lastHop;
    const next = flowHop(this.chain, dir)
      ?? (last && last.dir === dir && here !== undefined ? nextAlternative(last.alternatives, here) : undefined);
    if (!next) return;
    const fresh = flowHops(this.chain, dir);
    if (fresh.some((b) => b.id === next.id)) this.lastHop = { dir, alternatives: fresh };
    await this.select(next.id, true, "dependencies");
  }

  /** A row of the pinned query's track clicked: the event selection cleared, the row's columns in Details. */
  private showPinnedRow(row: PinnedRow | null): void {
    void this.select(undefined);
    if (!row) return;
    const p = this.panels.details;
    clear(p);
    const fields = orderedFields(Object.fromEntries(row.columns.map((c, i) => [c, row.cells[i]])))
      .map(([k, text]) => [k, this.eventLink(k === "id" && isEventId(text) ? text : linkedId(k, text), text)]);
    append(p, h("h3", { class: "event-name" }, row.name),
      h("p", { class: "muted" }, `a row of the pinned query · ${formatDuration(row.dur)} · starts at ${formatDuration(row.ts)}`),
      h("h4", {}, "Columns"), keyValues(table(["column", "value"], fields)));
    this.showSide("details");
  }

  private renderDetails(d: Details): void {
    const p = this.panels.details;
    clear(p);
    const fields = orderedFields(d.fields).map(([k, text]) => [k, this.eventLink(linkedId(k, text), text)]);
    const args = argRows(d.args);
    append(p, h("h3", { class: "event-name" }, d.name),
      h("p", { class: "muted" }, `${this.trackName(d.track)} · ${formatDuration(d.dur)} · starts at ${formatDuration(d.ts)}`),
      h("h4", {}, "Fields"), keyValues(table(["field", "value"], fields)),
      h("h4", {}, "Args"), args.length ? keyValues(table(["arg", "value"], args)) : h("p", { class: "muted" }, "no args recorded"),
      h("h4", {}, "Python stack"),
      d.stack.length ? h("ol", { class: "stack" }, ...d.stack.map((f) => h("li", {}, h("code", {}, f.name), ` ${f.file}:${f.line}`)))
        : h("p", { class: "muted" }, this.noStackNote(d)));
    if (d.provenance?.length) append(p, h("h4", {}, "Compiled code"), ...d.provenance.map((e) => this.compiledCode(e)));
  }

  /** Why an event has no Python stack: the trace was recorded without stacks, or (a kernel, a runtime
   *  call in a trace with stacks) the event has none of its own: its op's stack is one flow up. */
  private noStackNote(d: Details): string {
    if (!this.meta.with_stacks) return "no Python stack recorded for this event (capture with with_stack=True)";
    return d.layer === "framework" ? "no Python stack recorded for this event"
      : "no Python stack of its own: the op that launched it has one ([ walks up the flows to it)";
  }

  /** A field's value; when it names another event (`parent_id`, `op_id`, `launch_id`), a link that selects it. */
  private eventLink(id: EventId | null, text: string): HTMLElement | string {
    if (id === null) return text;
    return h("a", { class: "event-link", href: `?page=timeline&sel=${id}`, title: "Select this event",
      onclick: (ev: Event) => { const m = ev as MouseEvent; if (m.ctrlKey || m.metaKey || m.shiftKey) return; ev.preventDefault(); void this.select(id, true); } }, text);
  }

  /** One compiled entry: its kind and files, then per kernel its graph nodes and the model lines behind them. */
  private compiledCode(e: CompiledCode): HTMLElement {
    const kernels = provenanceRows(e).map((k) => h("li", {},
      h("code", {}, k.kernel), h("div", { class: "muted" }, k.nodes),
      k.sources.length ? h("ol", { class: "stack" }, ...k.sources.map((s) => h("li", { title: s.file },
        s.where, s.code ? h("pre", { class: "args" }, s.code) : null)))
        : h("p", { class: "muted" }, "no source lines recorded")));
    return h("div", { class: "provenance" },
      h("p", { class: "muted" }, `${e.kind}${e.graph ? ` of graph ${e.graph}` : ""}`),
      e.files.length ? h("ul", { class: "stack" }, ...e.files.map((f) => h("li", {}, h("code", {}, f)))) : null,
      kernels.length ? h("ul", { class: "stack" }, ...kernels)
        : h("p", { class: "muted" }, "no provenance recorded (tracking was off when it compiled)"));
  }

  private renderChain(c: Chain): void {
    const p = this.panels.dependencies;
    clear(p);
    const rows = (list: Brief[]) => list.map((b) => [String(b.hop ?? ""), b.name, b.layer, formatDuration(b.ts), formatDuration(b.dur)]);
    const focusOn = (list: Brief[]) => (i: number) => void this.select(list[i].id, true);
    if (!c.upstream.length && !c.downstream.length) {
      append(p, h("p", { class: "muted" }, "This event has no flows (no framework → runtime → device links)."));
      return;
    }
    append(p, h("p", {}, h("span", { class: "legend fr" }, "framework → runtime"), " ", h("span", { class: "legend rd" }, "runtime → device")),
      h("h4", {}, `Upstream events (${c.upstream.length})`), table(["hop", "name", "layer", "start", "duration"], rows(c.upstream), focusOn(c.upstream)),
      h("h4", {}, `Downstream events (${c.downstream.length})`), table(["hop", "name", "layer", "start", "duration"], rows(c.downstream), focusOn(c.downstream)));
    const tab = this.sideTabs.querySelector('[data-tab="dependencies"]');
    tab?.classList.add("has-data");
  }

  /** Keys outside a text box: Esc clears a range selection first, then the search; F, M, / and ?. */
  private onKey(ev: KeyboardEvent): void {
    const target = ev.target as HTMLElement;
    if (isPaletteKey(ev)) {
      ev.preventDefault();
      this.palette.toggle();
      return;
    }
    if (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "Escape") {
      if (this.help) this.toggleHelp();
      else if (this.timeline.clearRange()) {
        this.state.area = undefined;
        this.scheduleUrl();
        this.selectionPanel.replaceChildren(h("p", { class: "muted" }, "Shift+drag on the timeline to select an area (or drag on the time axis for a range over every track)."));
      }
      else if (this.search.active) this.search.clear();
      return;
    }
    const actions: Record<string, () => void> = {
      "?": () => this.toggleHelp(),
      "/": () => this.search.box.focus(),
      f: () => { if (this.state.page === "timeline") this.timeline.focusSelection(); },
      m: () => { if (this.state.page === "timeline") this.setMarks(addMark(this.marks, this.timeline.pointerNs())); },
      ".": () => void this.step("next"), ",": () => void this.step("prev"),
      "]": () => void this.hop("down"), "[": () => void this.hop("up"),
    };
    const action = actions[ev.key.length === 1 ? ev.key.toLowerCase() : ev.key] ?? actions[ev.key];
    if (!action) return;
    ev.preventDefault();
    action();
  }

  private toggleHelp(): void {
    if (this.help) {
      this.help.remove();
      this.help = null;
      return;
    }
    const close = h("button", { class: "dismiss", title: "Close (Esc)", onclick: () => this.toggleHelp() }, "×");
    this.help = h("div", { class: "help", role: "dialog", "aria-label": "Keyboard and mouse" },
      h("div", { class: "help-head" }, h("h3", {}, "Keyboard and mouse"), close), table(["keys", "does"], KEYS));
    document.body.appendChild(this.help);
    close.focus();
  }

  /** The marks drawn, listed in the Marks tab and kept in the URL. */
  private setMarks(marks: Mark[], show = true, render = true): void {
    this.marks = marks;
    this.state.marks = marks.length ? formatMarks(marks) : undefined;
    this.timeline.setMarks(marks);
    if (render) this.renderMarks();
    if (show) {
      this.showSide("marks");
      this.scheduleUrl();
    }
  }

  private renderMarks(): void {
    const p = this.panels.marks;
    clear(p);
    if (!this.marks.length) {
      append(p, h("p", { class: "muted" }, "Press M over the timeline to mark a time (or the selected event's start); marks stay in the link."));
      return;
    }
    const rows = markRows(this.marks).map((r, i) => [
      h("input", { class: "mark-name", value: r.name, "aria-label": `name of mark ${i + 1}`, maxlength: 60,
        onchange: (ev: Event) => this.renameMark(i, (ev.target as HTMLInputElement).value) }),
      r.at, r.sincePrevious,
      h("button", { class: "remove-mark", title: "Remove this mark", onclick: () => this.setMarks(this.marks.filter((_, j) => j !== i)) }, "×"),
    ]);
    append(p, h("h3", {}, `${this.marks.length} mark(s)`), table(["name", "at", "since previous", ""], rows),
      h("p", {}, h("button", { class: "export-marks", onclick: () => this.exportMarks() }, "Export JSON"), " ",
        h("button", { onclick: () => this.setMarks([]) }, "Remove all")));
  }

  private exportMarks(): void {
    const blob = new Blob([JSON.stringify(marksDocument(this.marks, this.meta.t0_ns), null, 1)], { type: "application/json" });
    const a = h("a", { href: URL.createObjectURL(blob), download: "kinetoscope-marks.json" });
    a.click();
    URL.revokeObjectURL(a.href);
  }

  /** Every action for the command palette (palette.ts), as of now: pages, groupings and each shown track. */
  private actions(): Action[] {
    const tl = this.timeline;
    const onTimeline = (run: () => void) => () => { this.toTimeline(); run(); };
    const layout = tl.trackLayout;
    const pages = this.meta.compare ? [...PAGES, "compare" as Page] : PAGES;
    const list: Action[] = [
      ...pages.map((page) => ({ title: `Go to page: ${page}`, run: () => this.go(page) })),
      { title: currentTheme() === "dark" ? "Theme: light" : "Theme: dark", run: () => this.themeToggle?.click() },
      { title: layout.hidePython ? "Show Python frames" : "Hide Python frames",
        run: onTimeline(() => tl.setTrackLayout({ ...tl.trackLayout, hidePython: !layout.hidePython })) },
      { title: "Add mark at the pointer (or the selected event's start)", keys: "M", run: onTimeline(() => this.setMarks(addMark(this.marks, tl.pointerNs()))) },
      { title: "Focus the selected event", keys: "F", run: onTimeline(() => tl.focusSelection()) },
      { title: "Zoom to fit everything", run: onTimeline(() => tl.fit()) },
      { title: "Next slice on the track", keys: ".", run: () => void this.step("next") },
      { title: "Previous slice on the track", keys: ",", run: () => void this.step("prev") },
      { title: "Follow the flows downstream", keys: "]", run: () => void this.hop("down") },
      { title: "Follow the flows upstream", keys: "[", run: () => void this.hop("up") },
      { title: "Search events", keys: "/", run: () => this.search.box.focus() },
      { title: "Show the keys", keys: "?", run: () => this.toggleHelp() },
      ...GROUPINGS.map((g) => ({ title: `Group tracks by ${g}`, run: onTimeline(() => tl.setGrouping(g)) })),
    ];
    if (this.marks.length) list.push({ title: `Export marks (${this.marks.length}) as JSON`, run: () => this.exportMarks() });
    if (layout.hidden.length) list.push({ title: `Show hidden tracks (${layout.hidden.length})`, run: onTimeline(() => tl.setTrackLayout({ ...tl.trackLayout, hidden: [] })) });
    return [...list, ...tl.trackNames().map((name) => ({ title: `Go to track: ${name}`, run: onTimeline(() => tl.findTrack(name)) }))];
  }

  private renameMark(index: number, name: string): void {
    const sorted = markRows(this.marks);
    // the list is not drawn again: the edited box (being left as this runs) already shows the name
    this.setMarks(sorted.map((m, i) => ({ ts: m.ts, name: i === index ? name.trim().slice(0, 60) || m.name : m.name })), true, false);
  }

  private async summariseRange(start: number, end: number, tracks: number[]): Promise<void> {
    this.state.area = formatArea({ start, end, tracks });
    this.scheduleUrl();
    this.showSide("selection");
    // under alignment the area is in drawn times: one rank's (one shift's) tracks map back exactly
    const shifts = new Set(tracks.map((t) => this.timeline.clocks.shiftOf(t)));
    const shift = shifts.size === 1 ? [...shifts][0] : 0;
    this.pivot.setArea({ start: start - shift, end: end - shift, tracks }, this.drawer.tab === "pivot");
    await this.areaPanel.show({ start: start - shift, end: end - shift, tracks });
    if (shifts.size > 1) {
      this.selectionPanel.prepend(h("p", { class: "muted clock-caveat" }, "These tracks are drawn shifted by different amounts "
        + "(aligned clocks or collective): the summary covers the area's times as recorded, not as drawn. Select one rank's "
        + "tracks, or turn the alignment off, for a summary of exactly what is drawn."));
    }
  }

  /** Shows `rows` in the drawer's Query tab as a query's result (benchmarks/viewer_tables.py times it). */
  showRows(columns: string[], rows: unknown[][]): void {
    this.query.show({ columns, types: [], rows, truncated: false, elapsed_ms: 0 });
    this.drawer.show("query");
  }

  private async jumpToOp(run: string, rank: number, ts: number): Promise<void> {
    const op = await get<Brief | null>("/api/op_at", { run, rank, ts });
    this.go("timeline");
    if (op) await this.select(op.id, true);
  }
}

/** A two-column table of keys and values whose values wrap inside the side panel. */
function keyValues(t: HTMLTableElement): HTMLTableElement {
  t.classList.add("kv");
  return t;
}

async function start(): Promise<void> {
  window.kinetoscope = { idle: isIdle };
  applyTheme(currentTheme(), false);
  const params = new URLSearchParams(location.search);
  if (params.has("code") || params.has("token")) {
    history.replaceState(null, "", location.pathname + withoutCode(location.search) + location.hash);
  }
  const done = busy();
  try {
    await signIn(params.get("code"));
    const prepared = await whenReady();
    const meta = await get<Meta>("/api/meta");
    window.kinetoscope.app = new App(meta);
    followWhole(prepared).catch((err: unknown) => console.warn("following the whole trace:", err));
  } catch (err) {
    if (err instanceof SignInError) return signInFailed(err);
    document.body.replaceChildren(h("div", { class: "fatal" }, h("h2", {}, "The viewer could not load the dataset"), h("pre", {}, String(err))));
  } finally {
    done();
  }
}

/** Without a session of this launch: a new link is printed where `kinetoscope view` runs. */
async function signInFailed(err: SignInError): Promise<void> {
  const said = err instanceof CodeRefused ? err.message : await askForLink();
  document.body.replaceChildren(h("div", { class: "fatal signin" }, h("h2", {}, "Open the viewer from its link"),
    h("p", {}, said), h("p", { class: "muted" },
      "Each link of `kinetoscope view` opens it once, in one browser; reloads and links copied from the page keep working there.")));
}

void start();
