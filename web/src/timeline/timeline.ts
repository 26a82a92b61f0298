// The system trace timeline: the toolbar, the label column and the canvas; it holds the view and the
// selection and hands the work to layout.ts, fetching.ts, input.ts and one painter per track kind (paint/).
import type { Brief, Chain, CounterData, EventId, Meta, SqlResult, WindowData } from "../lib/api";
import { busy } from "../lib/api";
import { ClockShifts } from "../lib/clocks";
import { counterTip, counterButtons } from "./counters";
import { append, clear, h } from "../lib/dom";
import { formatCount, formatDuration } from "../lib/format";
import type { Mark } from "../lib/marks";
import { notesBanner } from "../widgets/notes";
import { canvasColors } from "../lib/theme";
import type { PaneSize } from "../widgets/panes";
import { clampWidth, defaultLabelWidth, dragHandle, loadPane, savePane } from "../widgets/panes";
import type { Group, Grouping, Row } from "../lib/tracks";
import { GROUPINGS, groupTracks, isConstant, rowSource, withBusyRows } from "../lib/tracks";
import type { Area } from "../lib/selection";
import type { TrackLayout } from "./trackcontrol";
import { applyLayout, EMPTY_LAYOUT, findTracks, groupId, PINNED_KEY, PYTHON_FOLD_LANES, pythonLanes, rowKey, toggle, trackControls } from "./trackcontrol";
import { dragToReorder, moveTrack, scrollWhileDragging, sortByOrder } from "./trackorder";
import { busyShare, drawStrip } from "./groupstrip";
import { toggleTrack, tracksCrossed } from "../lib/selection";
import type { Viewport } from "../lib/viewport";
import { clamp, drawnExtent, focus, pan, toNs, toPx, zoom } from "../lib/viewport";
import type { LayoutRow } from "./layout";
import { AXIS_H, buildLayout, GROUP_H, INSTANT_R, isPinned, LABEL_FOLDED_W, layoutY, pinnedHeight, ROW_PAD, rowAt, rowOfTrack,
  screenY, SLICE_H, visibleRows } from "./layout";
import type { FetchedWindow, WindowAnswer, WindowRequest } from "./fetching";
import { fetchWindow, requestKey, serves, windowFor, windowsAhead } from "./fetching";
import { TimelineInput } from "./input";
import type { Tint, TrackIndex } from "./paint/slices";
import { drawSlices, indexByTrack } from "./paint/slices";
import { drawCounterRow } from "./paint/counters";
import { drawBusyRow } from "./paint/busy";
import { drawArrows } from "./paint/arrows";
import { drawAxis } from "./paint/axis";
import { drawMarks, drawRange } from "./paint/marks";
import type { PinnedSlice, PinnedTrack } from "./paint/pinned";
import { drawPinned, PIN_LANE_PX, pinnedAt, pinnedTrack } from "./paint/pinned";

/** The drag namespace of group headers: a header drops only on headers, a track only on its group's tracks. */
const GROUPS_ORDER = "*groups";

export interface TimelineEvents {
  select(id: EventId | undefined): void;
  range(start: number, end: number, tracks: number[]): void;
  viewChanged(): void;
  /** The "align clocks" toggle changed: event times from the API must be shifted anew (`clocks.brief`). */
  clocksChanged?(): void;
  /** A row of the pinned query's track was clicked (its columns and cells); null: a click beside its rows. */
  pinnedRow?(row: PinnedRow | null): void;
}

/** A row of the pinned query's track as the Details tab shows it. */
export interface PinnedRow { name: string; ts: number; dur: number; columns: string[]; cells: unknown[]; }


export class Timeline {
  readonly root: HTMLElement;
  vp: Viewport;
  grouping: Grouping = "process";
  selected: Brief | null = null;
  chain: Chain | null = null;
  range: { start: number; end: number } | null = null;
  /** The tracks of the area selection (with `range`); every track when it came from the axis. */
  areaTracks: number[] = [];
  marks: Mark[] = [];
  private groups: Group[] = [];
  /** Every group before the track layout (pins, hidden tracks, filter, lane limit) is applied. */
  private allGroups: Group[] = [];
  trackLayout: TrackLayout = EMPTY_LAYOUT;
  private readonly controls = trackControls({ layout: () => this.trackLayout, set: (l) => this.setTrackLayout(l),
    find: (text) => this.findTrack(text), names: () => this.trackNames() }, h);
  private readonly sticky = h("div", { class: "sticky-group", hidden: true });
  private collapsed = new Set<string>();
  private layout: LayoutRow[] = [];
  private data: WindowData | null = null;
  private byTrack = new Map<number, TrackIndex>();
  private counters: CounterData | null = null;
  private fetchTimer = 0;
  /** The window of the last fetch, answered or on its way (fetching.ts `serves`). */
  private wanted: FetchedWindow | null = null;
  /** When the view last moved (performance.now()): a move after a pause fetches at once. */
  private lastMoveMs = -Infinity;
  private fetchWait: (() => void) | null = null;
  private aborter: AbortController | null = null;
  /** Windows fetched ahead of the view once it rests (fetching.ts `windowsAhead`), answered or on their way. */
  private spares: Spare[] = [];
  private drawPending = false;
  private input: TimelineInput | null = null;
  readonly canvas = h("canvas", { class: "tl-canvas" });
  readonly axis = h("canvas", { class: "tl-axis" });
  /** A query result pinned as a track under the axis (paint/pinned.ts). */
  private pinned: PinnedTrack | null = null;
  /** The pinned track's row selected by a click on it (outlined). */
  private pinnedSelected: PinnedSlice | null = null;
  private readonly pinCanvas = h("canvas", { class: "tl-pinned-canvas" });
  private readonly pinRow = h("div", { class: "tl-pinned-row", hidden: true });
  readonly scroller = h("div", { class: "tl-scroll" });
  private readonly content = h("div", { class: "tl-content" });
  private readonly labels = h("div", { class: "tl-labels" });
  readonly tooltip = h("div", { class: "tooltip", hidden: true });
  private readonly banners = h("div", { class: "banners" });
  private readonly status = h("span", { class: "tl-status" });
  private readonly constantToggle = h("input", { type: "checkbox", "aria-label": "Show constant counters" });
  private labelPane: PaneSize = loadPane("labels", defaultLabelWidth(window.innerWidth));
  private matchQuery = "";
  private tint: Tint | null = null;
  private matches = new Set<EventId>();
  /** The selected collective's rows on every rank (collectivelinks.ts). */
  private linked = new Set<EventId>();
  /** The times the view can show (ns from the run start): the events' span, widened to counter samples outside it. */
  readonly extent: { start: number; end: number };
  /** "Align clocks" (clocks.ts): the shift of each rank's times as drawn. */
  readonly clocks: ClockShifts;
  private readonly clockToggle = h("input", { type: "checkbox", "aria-label": "Align the ranks' clocks" });

  /** `apiBase`: the prefix of the API this timeline reads ("" for the dataset served; "/new" for NEW in compare mode). */
  constructor(readonly meta: Meta, private readonly events: TimelineEvents, readonly apiBase = "") {
    this.extent = drawnExtent(meta);
    this.vp = { ...this.extent, width: 800 };
    this.clocks = new ClockShifts(meta);
    this.clockToggle.checked = this.clocks.aligned;
    this.clockToggle.addEventListener("change", () => this.setClocksAligned(this.clockToggle.checked));
    const groupSelect = h("select", { "aria-label": "Group tracks by", onchange: (e: Event) =>
      this.setGrouping((e.target as HTMLSelectElement).value as Grouping) },
      ...GROUPINGS.map((g) => h("option", { value: g }, `group by ${g}`)));
    groupSelect.id = "grouping";
    const toolbar = h("div", { class: "tl-toolbar" }, groupSelect,
      h("button", { title: "Zoom in (W)", onclick: () => this.zoomBy(0.5) }, "+"),
      h("button", { title: "Zoom out (S)", onclick: () => this.zoomBy(2) }, "−"),
      h("button", { title: "Show everything", onclick: () => this.fit() }, "Fit"),
      h("button", { class: "fold-labels", title: "Fold or unfold the track names (or double-click their edge)", onclick: () => this.foldLabels() }, "☰"),
      h("label", { class: "toggle", title: "Counters whose value never changes (or is always zero) are hidden" }, this.constantToggle, "constant counters"),
      this.clocks.available ? h("label", { class: "toggle clock-toggle", title: "Move each rank's events onto rank 0's clock by its offset estimated from the ends of matched collectives" },
        this.clockToggle, "align clocks") : null,
      this.controls.root,
      this.status,
      h("span", { class: "hint" }, "drag: pan · shift+drag: area · ctrl+wheel / W S: zoom · A D: pan · ?: all keys"));
    const canvasCol = h("div", { class: "tl-canvas-col" }, this.canvas);
    append(this.content, this.labels, canvasCol);
    append(this.scroller, h("div", { class: "sticky-anchor" }, this.sticky), this.content);
    const axisRow = h("div", { class: "tl-axis-row" }, h("div", { class: "tl-corner" }, "time from run start"), this.axis);
    const handle = h("div", { class: "tl-resize", title: "Drag to resize the track names; double-click to fold them" });
    const body = h("div", { class: "tl-body" }, axisRow, this.pinRow, this.scroller, handle);
    this.root = h("div", { class: "timeline" }, toolbar, this.banners, body, this.tooltip);
    scrollWhileDragging(this.scroller);
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute("aria-label", "Timeline: W S zoom, A D pan, Esc clears the range");
    this.constantToggle.addEventListener("change", () => this.setGrouping(this.grouping));
    dragHandle(handle, 1, { start: () => this.labelWidth, fold: () => this.foldLabels(),
      resize: (w) => this.setLabelWidth(w), end: () => savePane("labels", this.labelPane) });
    this.applyLabelWidth();
    this.renderBanners();
    this.bind();
    this.setGrouping("process");
  }

  /** Turns "align clocks" on or off: headers relabelled, the window fetched again with the shifts. */
  setClocksAligned(on: boolean): void {
    if (on === this.clocks.aligned) return;
    this.clocks.aligned = on;
    this.clockToggle.checked = on;
    this.refreshClocks();
  }

  /** After `clocks` changed: headers relabelled, the window fetched with the new shifts. */
  refreshClocks(): void {
    this.clockToggle.disabled = this.clocks.collective !== null;
    this.renderLabels();
    this.scheduleFetch(0);
    this.events.clocksChanged?.();
    this.events.viewChanged();
  }

  // ---- layout -------------------------------------------------------------------------------

  setGrouping(mode: Grouping): void {
    this.grouping = mode;
    (this.root.querySelector("#grouping") as HTMLSelectElement).value = mode;
    const counters = this.meta.counters.filter((c) => this.constantToggle.checked || !isConstant(c));
    const damage = this.meta.warnings.filter((w) => w.severity !== "note");
    this.allGroups = withBusyRows(groupTracks(mode, this.meta.tracks, counters, damage));
    this.groups = applyLayout(this.allGroups, this.trackLayout);
    this.relayout();
    this.events.viewChanged();
  }

  /** Pins, hidden tracks, the name filter and the lane limit (trackcontrol.ts). */
  setTrackLayout(layout: TrackLayout): void {
    this.trackLayout = layout;
    this.controls.refresh();
    this.setGrouping(this.grouping);
  }

  /** The track finder: unfolds the first track whose name contains `text`, scrolls to it and flashes its name. */
  findTrack(text: string): boolean {
    const found = findTracks(this.groups, text)[0];
    if (!found) return false;
    if (this.collapsed.delete(found.group.key)) this.relayout();
    const item = this.layout.find((l) => l.row === found.row);
    if (!item) return false;
    this.scroller.scrollTop = Math.max(0, item.y - GROUP_H);
    this.requestDraw();
    this.scheduleFetch(0);
    const label = this.labels.querySelector(`[data-key="${rowKey(found.row)}"]`);
    label?.classList.add("found");
    window.setTimeout(() => label?.classList.remove("found"), 1500);
    return true;
  }

  /** Every shown track's full name (group · track), for the track finder and the command palette. */
  trackNames(): string[] {
    return this.groups.flatMap((g) => g.rows.map((r) => `${g.label} · ${r.label}`));
  }

  /** The group before the layout (its rows all there, in their first order). */
  private originalGroup(group: Group): Group {
    return this.allGroups.find((g) => g.key === group.key) ?? group;
  }

  /** A group's header dragged onto another's (trackorder.ts). */
  private moveGroup(from: string, to: string, after: boolean): void {
    const ids = sortByOrder(this.allGroups, groupId, this.trackLayout.groupOrder).map(groupId);
    this.setTrackLayout({ ...this.trackLayout, groupOrder: moveTrack(this.trackLayout.groupOrder, ids, from, to, after) });
  }

  /** A track dragged onto another of its group (trackorder.ts). */
  private moveTrack(group: Group, from: string, to: string, after: boolean): void {
    const rows = this.allGroups.find((g) => g.key === group.key)?.rows ?? group.rows;
    const order = moveTrack(this.trackLayout.order, sortByOrder(rows, rowKey, this.trackLayout.order).map(rowKey), from, to, after);
    this.setTrackLayout({ ...this.trackLayout, order });
  }

  /** Pin and hide buttons of a track's label. */
  private trackActions(row: Row): HTMLElement {
    const key = rowKey(row);
    const pinned = this.trackLayout.pinned.includes(key);
    const act = (ev: Event, change: Partial<TrackLayout>) => { ev.stopPropagation(); this.setTrackLayout({ ...this.trackLayout, ...change }); };
    return h("span", { class: "track-actions" },
      h("button", { class: `pin${pinned ? " on" : ""}`, title: pinned ? "Unpin this track" : "Pin this track to the top",
        "aria-label": pinned ? `unpin ${row.label}` : `pin ${row.label}`, onclick: (ev: Event) => act(ev, { pinned: toggle(this.trackLayout.pinned, key) }) }, pinned ? "unpin" : "pin"),
      h("button", { class: "hide", title: "Hide this track (the toolbar's “show hidden” brings it back)", "aria-label": `hide ${row.label}`,
        onclick: (ev: Event) => act(ev, { hidden: toggle(this.trackLayout.hidden, key), pinned: this.trackLayout.pinned.filter((k) => k !== key) }) }, "×"));
  }

  /** The header of the group at the top of the view (below the pinned tracks), while its own header is
   *  scrolled away; and the pinned tracks' names, kept at the top. */
  private updateSticky(): void {
    const scroll = this.scroller.scrollTop;
    const pinned = pinnedHeight(this.layout);
    const first = this.layout.find((l) => !isPinned(l) && l.y + l.height > scroll + pinned);
    const header = first && this.layout.find((l) => l.kind === "group" && l.group === first.group);
    const show = !!header && header.y < scroll + pinned;
    this.sticky.hidden = !show;
    this.sticky.style.top = `${pinned}px`;
    if (show && this.sticky.textContent !== header!.group.label) this.sticky.textContent = header!.group.label;
    for (const el of this.labels.querySelectorAll<HTMLElement>(".label.pinned")) el.style.top = `${Number(el.dataset.y) + scroll}px`;
  }

  // ---- the label column ----------------------------------------------------------------------

  get labelWidth(): number {
    return this.labelPane.collapsed ? LABEL_FOLDED_W : this.labelPane.width;
  }

  private setLabelWidth(width: number): void {
    this.labelPane = { width: clampWidth(width, 120, window.innerWidth * 0.6), collapsed: false };
    this.applyLabelWidth();
  }

  private foldLabels(): void {
    this.labelPane = { ...this.labelPane, collapsed: !this.labelPane.collapsed };
    savePane("labels", this.labelPane);
    this.applyLabelWidth();
  }

  private applyLabelWidth(): void {
    this.root.style.setProperty("--label-w", `${this.labelWidth}px`);
    this.root.classList.toggle("labels-folded", this.labelPane.collapsed);
    this.resize();
    this.requestDraw();
  }

  private relayout(): void {
    const { rows, height } = buildLayout(this.groups, this.collapsed);
    this.layout = rows;
    this.content.style.height = `${height}px`;
    this.renderLabels();
    this.scheduleFetch(0);
  }

  renderLabels(): void {
    clear(this.labels);
    for (const item of this.layout) {
      const style = `top:${item.y}px;height:${item.height}px`;
      if (item.kind === "group") {
        const open = !this.collapsed.has(item.group.key);
        const warn = item.group.warnings.length
          ? h("span", { class: "badge warn", title: item.group.warnings.map((w) => `${w.file}: ${w.message}`).join("\n") },
            `⚠ ${item.group.warnings.length}`) : null;
        const header = h("div", { class: `label group${isPinned(item) ? " pinned" : ""}`, style, "data-y": item.y, "data-group": item.group.key, tabindex: 0, role: "button",
          "aria-expanded": String(open), title: `${item.group.label} (Enter folds or unfolds)`,
          onclick: () => this.toggle(item.group.key) }, h("span", { class: "caret" }, open ? "▾" : "▸"),
          h("span", { class: "name" }, item.group.label), this.clockNote(item.group), warn);
        header.addEventListener("keydown", (ev) => {
          if (ev.key !== "Enter" && ev.key !== " ") return;
          ev.preventDefault();
          this.toggle(item.group.key);
          (this.labels.querySelector(`[data-group="${CSS.escape(item.group.key)}"]`) as HTMLElement | null)?.focus();
        });
        if (!isPinned(item) && item.group.key !== PINNED_KEY) {
          dragToReorder(header, groupId(this.originalGroup(item.group)), GROUPS_ORDER, (from, to, after) => this.moveGroup(from, to, after));
        }
        append(this.labels, header);
      } else {
        const row = item.row!;
        const warn = row.warnings.length ? h("span", { class: "badge warn", title: row.warnings.map((w) => w.message).join("\n") }, "⚠") : null;
        const full = row.track ? (row.opsOnly ? row.track.ops_lanes ?? row.track.lanes : row.track.lanes) : row.lanes;
        const cut = row.lanes < full ? h("span", { class: "badge", title: "Lanes beyond the lane limit are not drawn" }, `${row.lanes}/${full}`) : null;
        const label = h("div", { class: `label ${row.kind}${isPinned(item) ? " pinned" : ""}`, style, "data-y": item.y, "data-track": row.kind === "slice" ? row.id : undefined,
          "data-counter": row.kind === "counter" ? row.id : undefined, "data-key": rowKey(row), title: row.label },
        this.areaBox(row), h("span", { class: "name" }, row.label), cut, this.pythonButton(row), warn,
        row.counter ? counterButtons(row.counter, () => { this.requestDraw(); this.events.viewChanged(); }) : null, this.trackActions(row));
        if (!isPinned(item)) dragToReorder(label, rowKey(row), item.group.key, (from, to, after) => this.moveTrack(item.group, from, to, after));
        append(this.labels, label);
      }
    }
  }

  /** On a thread with more than `PYTHON_FOLD_LANES` lanes of Python frames: the button that unfolds them
   *  (they are folded by default, so that the device streams stay on the first screen) or folds them again. */
  private pythonButton(row: Row): HTMLElement | null {
    const lanes = pythonLanes(row);
    if (row.kind !== "slice" || lanes <= PYTHON_FOLD_LANES || this.trackLayout.hidePython) return null;
    const key = rowKey(row);
    const open = this.trackLayout.pythonOpen.includes(key);
    return h("button", { class: `python-fold${open ? " on" : ""}`, "aria-expanded": String(open),
      title: open ? "Fold this thread's Python frames (its ops stay)" : `Show this thread's ${lanes} lanes of Python frames`,
      onclick: (ev: Event) => { ev.stopPropagation(); this.setTrackLayout({ ...this.trackLayout, pythonOpen: toggle(this.trackLayout.pythonOpen, key) }); } },
      open ? "fold Python" : `+${lanes} Python lanes`);
  }

  /** While an area is selected, a slice track's box that adds it to the area or takes it out. */
  private areaBox(row: Row): HTMLElement | null {
    if (!this.range || row.kind !== "slice") return null;
    const box = h("input", { type: "checkbox", class: "area-track", "aria-label": `${row.label} in the selection`,
      title: "In the area selection (untick to leave it out)" });
    box.checked = this.areaTracks.includes(row.id);
    box.addEventListener("click", (ev) => ev.stopPropagation());
    box.addEventListener("change", () => {
      if (!this.range) return;
      this.areaTracks = toggleTrack(this.areaTracks, row.id);
      this.requestDraw();
      this.events.range(Math.round(this.range.start), Math.round(this.range.end), this.areaTracks);
    });
    return box;
  }

  /** Shows `area` (from a link) as the selection; null clears it. */
  setArea(area: Area | null): void {
    this.range = area ? { start: area.start, end: area.end } : null;
    this.areaTracks = area ? area.tracks : [];
    this.renderLabels();
    this.requestDraw();
  }

  private renderBanners(): void {
    clear(this.banners);
    append(this.banners, notesBanner(this.meta.warnings));
    for (const w of this.meta.warnings.filter((x) => x.severity !== "note")) {
      const where = `rank ${w.rank}${w.file ? ` · ${w.file}` : ""}`;
      append(this.banners, h("div", { class: `banner ${w.kind}`, role: "alert", onclick: () => this.scrollToRank(w.run, w.rank) },
        h("strong", {}, w.kind.replace(/_/g, " ")), ` ${where}: `, w.message));
    }
  }

  private toggle(key: string): void {
    if (this.collapsed.has(key)) this.collapsed.delete(key);
    else this.collapsed.add(key);
    this.relayout();
  }

  private scrollToRank(run: string, rank: number): void {
    const item = this.layout.find((l) => l.kind === "group" && l.group.rows.some((r) => rowSource(r).run === run && rowSource(r).rank === rank));
    if (item) this.scroller.scrollTop = item.y;
  }

  // ---- viewport and fetching -------------------------------------------------------------------

  setViewport(start: number, end: number): void {
    this.vp = clamp({ start, end, width: this.vp.width }, this.extent.start, this.extent.end);
    this.viewMoved();
  }

  /** Shows everything drawn: every event and every counter sample. */
  fit(): void {
    this.setViewport(this.extent.start, this.extent.end);
  }

  /** The view moved (zoom, pan or drag): redraw now; unless the window fetched last serves the new view,
   *  fetch: at once after a pause, else once the moves stop for 40 ms. */
  viewMoved(): void {
    this.requestDraw();
    const now = performance.now();
    const spare = this.spares.some((s) => serves(s.window, this.vp));
    if (!serves(this.wanted, this.vp)) this.scheduleFetch(now - this.lastMoveMs > 100 || spare ? 0 : 40);
    this.lastMoveMs = now;
    this.events.viewChanged();
  }

  zoomBy(factor: number, anchorPx = this.vp.width / 2): void {
    const next = zoom(this.vp, factor, anchorPx);
    this.setViewport(next.start, next.end);
  }

  panBy(px: number): void {
    const next = pan(this.vp, px);
    this.setViewport(next.start, next.end);
  }

  private scheduleFetch(delay: number): void {
    window.clearTimeout(this.fetchTimer);
    this.fetchWait?.();
    const done = busy();
    this.fetchWait = done;
    this.fetchTimer = window.setTimeout(() => {
      void this.fetch().finally(done);
    }, delay);
  }

  private clockNote(group: Group): HTMLElement | null {
    const text = this.clocks.groupLabel(group.rows.map(rowSource));
    return text ? h("span", { class: `clock-note${this.clocks.aligned ? " aligned" : ""}`, title: text }, text) : null;
  }

  /** Fetches the window of the view, or takes the one fetched ahead that serves it; then fetches ahead. */
  private async fetch(): Promise<void> {
    const req = this.windowRequest();
    const key = requestKey(req, this.clocks);
    this.aborter?.abort();
    const spare = this.spares.find((s) => s.key === key && serves(s.window, this.vp));
    for (const s of this.spares) if (s !== spare) s.aborter.abort();
    this.spares = [];
    const aborter = spare?.aborter ?? new AbortController();
    this.aborter = aborter;
    const wanted = (this.wanted = spare?.window ?? windowFor(this.vp));
    try {
      const answer = await (spare?.answer ?? fetchWindow(this.apiBase, { window: wanted, ...req }, this.clocks, aborter.signal));
      wanted.truncated = answer.data.truncated;
      this.matches = answer.matches;
      this.setData(answer.data, answer.counters);
      this.afterDraw(() => { if (this.wanted === wanted) this.fetchAhead(req, key); });
    } catch (err) {
      if ((err as Error).name === "AbortError") return;
      if (this.wanted === wanted) this.wanted = null; // the next move asks again
      if (spare) this.scheduleFetch(0); // fetched ahead and failed: ask for the view's own
      else this.status.textContent = `error: ${(err as Error).message}`;
    }
  }

  /** What a window for the view asks besides its times: the tracks in view (those of folded groups too),
   *  those drawn as ops only, the counters, the search. */
  private windowRequest(): Omit<WindowRequest, "window"> {
    const rows = this.visibleRows();
    const busy = rows.flatMap((r) => r.row?.busy?.tracks ?? []);
    const tracks = [...new Set([...rows.filter((r) => r.kind === "slice").map((r) => r.row!.id), ...this.foldedTracks(rows), ...busy])];
    return { tracks, opsOnly: rows.filter((r) => r.row?.opsOnly).map((r) => r.row!.id),
      counters: rows.filter((r) => r.kind === "counter").map((r) => r.row!.id), matchQuery: this.matchQuery };
  }

  /** Runs `fn` once the draw requested is done (its frame's callbacks run in order), the page busy until then:
   *  what the server answers ahead of the view must not hold up the view's own draw on a busy machine. */
  private afterDraw(fn: () => void): void {
    const done = busy();
    requestAnimationFrame(() => window.setTimeout(() => { fn(); done(); }, 0));
  }

  /** Fetches the windows two zoom steps in and out of the view, for the next fetch to take (`fetch`). */
  private fetchAhead(req: Omit<WindowRequest, "window">, key: string): void {
    for (const window of windowsAhead(this.vp, this.extent, this.wanted)) {
      const aborter = new AbortController();
      const answer = fetchWindow(this.apiBase, { window, ...req }, this.clocks, aborter.signal, true);
      // a capped answer serves no view (`serves`); one that fails or is dropped is asked anew when needed
      answer.then((a) => { window.truncated = a.data.truncated; }, () => undefined);
      this.spares.push({ window, key, answer, aborter });
    }
  }

  private visibleRows(margin = 200): LayoutRow[] {
    return visibleRows(this.layout, this.scroller.scrollTop, this.scroller.clientHeight, margin);
  }

  /** The slice tracks of the folded groups among `rows`, for their headers' busy strips (groupstrip.ts). */
  private foldedTracks(rows: LayoutRow[]): number[] {
    return rows.filter((r) => r.kind === "group" && this.collapsed.has(r.group.key))
      .flatMap((r) => r.group.rows.filter((x) => x.kind === "slice").map((x) => x.id));
  }

  private setData(data: WindowData, counters: CounterData | null): void {
    this.data = data;
    this.counters = counters;
    this.byTrack = indexByTrack(data);
    const shown = data.slices.id.length;
    this.status.textContent = `${formatCount(shown)} slices, ${formatCount(data.blocks.track.length)} merged blocks` +
      (data.truncated ? " (capped: zoom in for all)" : "");
    this.requestDraw();
  }

  // ---- drawing -------------------------------------------------------------------------------

  requestDraw(): void {
    if (this.drawPending) return;
    this.drawPending = true;
    requestAnimationFrame(() => {
      this.drawPending = false;
      this.draw();
    });
  }

  private resize(): void {
    const width = Math.max(this.scroller.clientWidth - this.labelWidth, 100);
    const height = this.scroller.clientHeight;
    const dpr = window.devicePixelRatio || 1;
    for (const [canvas, hgt] of [[this.canvas, height], [this.axis, AXIS_H]] as const) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(hgt * dpr);
      canvas.style.width = `${width}px`;
      canvas.style.height = `${hgt}px`;
    }
    if (width !== this.vp.width) {
      this.vp = { ...this.vp, width };
      this.scheduleFetch(0);
    }
  }

  /** Draws the view; the time it took is kept in the root's `data-draw-ms` and when it ended in `data-drawn-at`
   *  (`performance.now()`; benchmarks/viewer_draw.py reads both). */
  private draw(): void {
    const started = performance.now();
    this.paint();
    const ended = performance.now();
    this.root.dataset.drawMs = (ended - started).toFixed(2);
    this.root.dataset.drawnAt = ended.toFixed(2);
  }

  private paint(): void {
    const ctx = this.canvas.getContext("2d")!;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const width = this.vp.width;
    const height = this.scroller.clientHeight;
    const scroll = this.scroller.scrollTop;
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const pinned = pinnedHeight(this.layout);
    const rows = this.visibleRows(0);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, pinned, width, Math.max(height - pinned, 0)); // scrolled rows pass under the pinned ones
    ctx.clip();
    for (const item of rows) if (!isPinned(item)) this.drawRow(ctx, item, item.y - scroll, width);
    ctx.restore();
    for (const item of rows) if (isPinned(item)) this.drawRow(ctx, item, item.y, width);
    this.updateSticky();
    if (!this.sticky.hidden) {
      ctx.fillStyle = canvasColors().group;
      ctx.fillRect(0, pinned, width, GROUP_H);
    }
    const areaRows = rows.filter((l) => l.kind === "slice" && this.areaTracks.includes(l.row!.id))
      .map((l) => ({ y: screenY(l, scroll), height: l.height }));
    drawRange(ctx, this.vp, this.range, areaRows, height);
    drawMarks(ctx, this.vp, this.marks, height);
    const labels = drawArrows(ctx, this.chain, (b) => this.anchor(b), this.meta.flow_kinds);
    // where the launch latencies went, in canvas px (tests/viewer/test_browser_defects.py reads it)
    this.root.dataset.latencyLabels = labels.map((l) => [l.x, l.y, l.w, l.h].map(Math.round).join(",")).join(" ");
    drawAxis(this.axis, this.vp, this.marks, this.range);
    this.paintPinned();
  }

  private drawRow(ctx: CanvasRenderingContext2D, item: LayoutRow, y: number, width: number): void {
    if (item.kind === "group") {
      ctx.fillStyle = canvasColors().group;
      ctx.fillRect(0, y, width, item.height);
      if (this.data && this.collapsed.has(item.group.key)) {
        const tracks = new Set(this.foldedTracks([item]));
        const pxNs = (this.vp.end - this.vp.start) / width;
        drawStrip(ctx, busyShare(this.data, tracks, this.vp.start, pxNs, Math.ceil(width)), y, item.height);
      }
    } else if (item.kind === "slice") {
      const mine = this.data && this.byTrack.get(item.row!.id);
      if (this.data && mine) {
        drawSlices(ctx, { vp: this.vp, data: this.data, selected: this.selected?.id, matches: this.matches, linked: this.linked, tint: this.tint },
          mine, item.row!.lanes, y);
      }
    } else if (item.kind === "busy") {
      if (this.data) drawBusyRow(ctx, this.vp, this.data, item.row!.busy!, y, item.height);
    } else {
      drawCounterRow(ctx, this.vp, item.row!.counter!, this.counters, y, item.height);
    }
    if (item.row?.warnings.length) {
      ctx.fillStyle = "rgba(230, 150, 0, 0.9)";
      ctx.fillRect(0, y, 4, item.height);
    }
    ctx.fillStyle = canvasColors().gap;
    ctx.fillRect(0, y + item.height - 1, width, 1);
  }

  /** The time under the pointer when it is over the timeline, else the selected event's start,
   *  else the middle of the view: where M puts a mark. */
  pointerNs(): number {
    const hover = this.input?.hover;
    if (hover && this.input!.overCanvas()) return toNs(this.vp, hover.x - this.canvas.getBoundingClientRect().left);
    return this.selected ? this.selected.ts : (this.vp.start + this.vp.end) / 2;
  }

  setMarks(marks: Mark[]): void {
    this.marks = marks;
    this.requestDraw();
  }

  /** Pins `result` (columns ts_ns, dur_ns, name; track_id optional) as a track under the axis; null unpins. */
  pin(result: SqlResult | null): void {
    this.pinned = result ? pinnedTrack(result, this.meta.t0_ns, `query · ${formatCount(result.rows.length)} rows`) : null;
    this.pinnedSelected = null;
    this.pinRow.hidden = !this.pinned;
    clear(this.pinRow);
    if (this.pinned) {
      append(this.pinRow, h("div", { class: "tl-corner pinned-label", title: "A query result pinned from the Query tab" }, this.pinned.title,
        h("button", { class: "unpin", title: "Unpin the query's track", onclick: () => this.pin(null) }, "×")), this.pinCanvas);
    }
    this.resize();
    this.requestDraw();
  }

  /** The pinned query's track: its rows in the view. */
  private paintPinned(): void {
    if (!this.pinned) return;
    const height = this.pinned.lanes * PIN_LANE_PX + 4;
    const dpr = window.devicePixelRatio || 1;
    const width = this.vp.width;
    if (this.pinCanvas.width !== Math.round(width * dpr) || this.pinCanvas.height !== Math.round(height * dpr)) {
      this.pinCanvas.width = Math.round(width * dpr);
      this.pinCanvas.height = Math.round(height * dpr);
      this.pinCanvas.style.width = `${width}px`;
      this.pinCanvas.style.height = `${height}px`;
    }
    const ctx = this.pinCanvas.getContext("2d")!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    drawPinned(ctx, this.vp, this.pinned, (track) => this.pinnedShift(track), this.pinnedSelected);
  }

  private pinnedShift(track: number | null): number {
    return track === null ? 0 : this.clocks.shiftOf(track);
  }

  /** A click on the pinned query's track: the row under it is selected and its Details shown. */
  private clickPinned(ev: MouseEvent): void {
    if (!this.pinned) return;
    const rect = this.pinCanvas.getBoundingClientRect();
    const found = pinnedAt(this.vp, this.pinned, (track) => this.pinnedShift(track), ev.clientX - rect.left, ev.clientY - rect.top);
    this.pinnedSelected = found;
    this.requestDraw();
    this.events.pinnedRow?.(found && { name: found.name, ts: found.ts + this.pinnedShift(found.track), dur: found.dur,
      columns: this.pinned.columns, cells: found.cells });
  }

  /** Zooms to the selected event (F); false when nothing is selected. */
  focusSelection(): boolean {
    if (!this.selected) return false;
    this.reveal(this.selected, true);
    return true;
  }

  /** Where an event is drawn, in canvas coordinates (clamped to the view when off screen). */
  private anchor(b: Brief): { x: number; y: number } | null {
    const row = rowOfTrack(this.layout, b.track);
    if (!row) return null;
    const x = toPx(this.vp, b.ts);
    const lane = row.row?.opsOnly ? Math.max(b.ops_lane ?? b.lane, 0) : b.lane;
    const y = screenY(row, this.scroller.scrollTop) + ROW_PAD + Math.min(lane, row.row!.lanes - 1) * SLICE_H + SLICE_H / 2;
    return { x: Math.min(Math.max(x, 0), this.vp.width), y: Math.min(Math.max(y, 0), this.scroller.clientHeight) };
  }

  // ---- hit testing and interaction -----------------------------------------------------------

  /** The window fetched last (input.ts). */
  get windowData(): WindowData | null {
    return this.data;
  }

  /** The layout position under canvas height `y` (input.ts). */
  layoutAt(y: number): number {
    return layoutY(this.layout, y, this.scroller.scrollTop);
  }

  select(id: EventId | undefined): void {
    this.events.select(id);
  }

  rangeChosen(start: number, end: number, tracks: number[]): void {
    this.events.range(start, end, tracks);
  }

  /** The slice or block under (x, y) in canvas coordinates. */
  hit(x: number, y: number): { kind: "slice"; index: number } | { kind: "block"; index: number } | { kind: "counter"; row: LayoutRow } | null {
    const row = rowAt(this.layout, y, this.scroller.scrollTop);
    const d = this.data;
    if (!row || !d) return null;
    if (row.kind === "counter") return { kind: "counter", row };
    if (row.kind !== "slice") return null;
    const lane = Math.floor((y - screenY(row, this.scroller.scrollTop) - ROW_PAD) / SLICE_H);
    const t = toNs(this.vp, x);
    const tol = 2 * (this.vp.end - this.vp.start) / this.vp.width;
    const mine = this.byTrack.get(row.row!.id);
    if (!mine) return null;
    let best = -1;
    for (const i of mine.slices) {
      if (d.slices.lane[i] !== lane) continue;
      const near = d.slices.dur[i] === 0 ? (INSTANT_R + 1) * tol / 2 : tol; // an instant's marker is wider than 2 px
      if (d.slices.ts[i] - near <= t && t <= d.slices.ts[i] + d.slices.dur[i] + near) {
        if (best < 0 || d.slices.dur[i] < d.slices.dur[best]) best = i;
      }
    }
    if (best >= 0) return { kind: "slice" as const, index: best };
    for (const i of mine.blocks) {
      if (d.blocks.lane[i] === lane && d.blocks.ts[i] - tol <= t && t <= d.blocks.end[i] + tol) return { kind: "block" as const, index: i };
    }
    return null;
  }

  showTooltip(ev: MouseEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    const found = this.hit(ev.clientX - rect.left, ev.clientY - rect.top);
    const d = this.data;
    if (!found || !d) {
      this.tooltip.hidden = true;
      return;
    }
    clear(this.tooltip);
    if (found.kind === "slice") {
      const i = found.index;
      append(this.tooltip, h("div", { class: "tt-name" }, d.strings[d.slices.name[i]]),
        h("div", {}, `${formatDuration(d.slices.dur[i])} · starts at ${formatDuration(d.slices.ts[i])}`),
        h("div", { class: "muted" }, "click for details"));
    } else if (found.kind === "block") {
      const i = found.index;
      append(this.tooltip, h("div", { class: "tt-name" }, `${formatCount(d.blocks.count[i])} events merged`),
        h("div", {}, `longest: ${d.strings[d.blocks.name[i]]}`),
        h("div", {}, `busy ${formatDuration(d.blocks.busy[i])} of ${formatDuration(d.blocks.end[i] - d.blocks.ts[i])}`),
        h("div", { class: "muted" }, "zoom in to see each event"));
    } else {
      const c = found.row.row!.counter!;
      append(this.tooltip, ...counterTip(c, this.counters?.series[String(c.id)], toNs(this.vp, ev.clientX - rect.left)));
    }
    this.tooltip.hidden = false;
    this.tooltip.style.left = `${Math.min(ev.clientX + 14, window.innerWidth - 320)}px`;
    this.tooltip.style.top = `${ev.clientY + 14}px`;
  }

  private bind(): void {
    new ResizeObserver(() => {
      this.resize();
      this.requestDraw();
    }).observe(this.scroller);
    this.pinCanvas.addEventListener("click", (ev) => this.clickPinned(ev));
    this.scroller.addEventListener("scroll", () => {
      this.requestDraw();
      this.scheduleFetch(60);
    });
    this.input = new TimelineInput(this);
  }

  /** The tracks a selection drag covers: those crossed on the canvas, every track from the axis. */
  dragTracks(top: number | undefined, now: number): number[] {
    const rows = this.layout.map((l) => ({ y: l.y, height: l.height, kind: l.kind, id: l.row?.id }));
    if (top === undefined) return rows.filter((r) => r.kind === "slice").map((r) => r.id!);
    return tracksCrossed(rows, top, now);
  }

  /** Clears the range selection; false when there was none. */
  clearRange(): boolean {
    if (!this.range) return false;
    this.setArea(null);
    return true;
  }

  focus(): void {
    this.canvas.focus({ preventScroll: true });
  }

  /** How many events of the last window fetched match the highlighted query. */
  get matchCount(): number {
    return this.matches.size;
  }

  /** Fills slices by `tint` instead of their name's hue (null: by hue again); compare mode's colour by delta. */
  setTint(tint: Tint | null): void {
    this.tint = tint;
    this.requestDraw();
  }

  /** Highlights the events matching `q` (empty: none) in every view from now on. */
  setMatches(q: string): void {
    this.matchQuery = q;
    this.matches.clear();
    this.scheduleFetch(0);
  }

  // ---- selection -------------------------------------------------------------------------------

  /** Outlines these events (the selected collective on every rank); [] for none. */
  setLinked(ids: EventId[]): void {
    this.linked = new Set(ids);
    this.root.dataset.linked = String(this.linked.size);
    this.requestDraw();
  }

  setSelection(brief: Brief | null, chain: Chain | null): void {
    this.selected = brief;
    if (brief) this.pinnedSelected = null; // one selection at a time: an event, or a pinned row
    this.chain = chain;
    this.requestDraw();
  }

  /** Brings an event into view at the present zoom: the view pans to centre it when it is not all in view,
   *  its group unfolds and its track scrolls into view. */
  panTo(b: Brief): void {
    const span = this.vp.end - this.vp.start;
    if (b.ts < this.vp.start || b.ts + b.dur > this.vp.end) this.setViewport(b.ts + b.dur / 2 - span / 2, b.ts + b.dur / 2 + span / 2);
    this.reveal(b, false);
  }

  /** Brings an event into view: expands its group, scrolls to its track and zooms around it. */
  reveal(b: Brief, zoomTo = true): void {
    const group = this.groups.find((g) => g.rows.some((r) => r.kind === "slice" && r.id === b.track));
    if (group && this.collapsed.delete(group.key)) this.relayout();
    const row = rowOfTrack(this.layout, b.track);
    if (row && !isPinned(row)) { // a pinned track is always in view
      const y = row.y + ROW_PAD + b.lane * SLICE_H;
      if (y < this.scroller.scrollTop || y > this.scroller.scrollTop + this.scroller.clientHeight - 40) {
        this.scroller.scrollTop = Math.max(0, y - this.scroller.clientHeight / 3);
      }
    }
    if (zoomTo) {
      const next = focus(this.vp, b.ts, b.dur);
      this.setViewport(next.start, next.end);
    }
  }
}

/** A window fetched ahead of the view: its answer serves a later view it covers, asked with the same `key`. */
interface Spare { window: FetchedWindow; key: string; answer: Promise<WindowAnswer>; aborter: AbortController; }
