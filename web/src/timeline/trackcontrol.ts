// Track control: pinned tracks (kept at the top), hidden tracks, a name filter and a lane limit,
// and the tracks' order within their group (trackorder.ts), applied to the grouped rows; kept in the
// deep link (`pin=`, `hide=`, `tfilter=`, `lanes=`, `order=`, `gorder=`).
import type { Group, Row } from "../lib/tracks";
import { sortByOrder } from "./trackorder";

export interface TrackLayout { pinned: string[]; hidden: string[]; filter: string; laneLimit: number; hidePython: boolean; order: string[];
  /** Tracks whose Python frames are shown although they have more than `PYTHON_FOLD_LANES` lanes of them. */
  pythonOpen: string[];
  /** Groups in this order, each named by its first track's key (`groupId`); groups not named follow. */
  groupOrder: string[]; }
export const EMPTY_LAYOUT: TrackLayout = { pinned: [], hidden: [], filter: "", laneLimit: 0, hidePython: false, order: [], groupOrder: [], pythonOpen: [] };
/** A thread with more lanes of Python frames than this shows its ops only until its Python frames are unfolded. */
export const PYTHON_FOLD_LANES = 8;
export const LANE_LIMITS = [0, 1, 2, 4, 8, 16];
export const PINNED_KEY = "pinned";

/** A row's key in the layout: `t12` for slice track 12, `c3` for counter 3, `b12` for the busy row of the
 *  device whose first stream is track 12. */
export function rowKey(row: Row): string {
  return `${row.kind === "slice" ? "t" : row.kind === "busy" ? "b" : "c"}${row.id}`;
}

/** Lanes of Python frames a slice track has above its ops (0 when it has none). */
export function pythonLanes(row: Row): number {
  const ops = row.track?.ops_lanes ?? 0;
  return ops > 0 ? Math.max(row.track!.lanes - ops, 0) : 0;
}

/** Whether a row is drawn without its Python frames: all of them when asked (`hidePython`), else those with
 *  more than `PYTHON_FOLD_LANES` lanes of frames that were not unfolded. */
export function pythonFolded(row: Row, layout: TrackLayout): boolean {
  if (!row.track?.ops_lanes) return false;
  return layout.hidePython || (pythonLanes(row) > PYTHON_FOLD_LANES && !layout.pythonOpen.includes(rowKey(row)));
}

/** A group's name in `groupOrder`: its first track's key (the same whichever tracks are hidden or moved). */
export function groupId(g: Group): string {
  return g.rows.length ? rowKey(g.rows[0]) : g.key;
}

/** The groups as shown: hidden rows and rows whose name does not match the filter left out, pinned
 *  rows moved (in pin order) into a first group of their own, each track at most `laneLimit` lanes high. */
export function applyLayout(groups: Group[], layout: TrackLayout): Group[] {
  const hidden = new Set(layout.hidden);
  const pinned = new Map(layout.pinned.map((k, i) => [k, i]));
  const filter = layout.filter.trim().toLowerCase();
  const limit = (row: Row): Row => {
    const shown = pythonFolded(row, layout) ? { ...row, lanes: row.track!.ops_lanes!, opsOnly: true } : row;
    return layout.laneLimit > 0 && shown.lanes > layout.laneLimit ? { ...shown, lanes: layout.laneLimit } : shown;
  };
  const top: { at: number; row: Row }[] = [];
  const out: Group[] = [];
  for (const g of sortByOrder(groups, groupId, layout.groupOrder)) {
    const rows: Row[] = [];
    for (const row of sortByOrder(g.rows, rowKey, layout.order)) {
      const key = rowKey(row);
      if (hidden.has(key)) continue;
      if (pinned.has(key)) top.push({ at: pinned.get(key)!, row: limit({ ...row, label: `${g.label} · ${row.label}` }) });
      else if (!filter || row.label.toLowerCase().includes(filter) || g.label.toLowerCase().includes(filter)) rows.push(limit(row));
    }
    if (rows.length) out.push({ ...g, rows });
  }
  if (!top.length) return out;
  top.sort((a, b) => a.at - b.at);
  return [{ key: PINNED_KEY, label: "pinned", rows: top.map((t) => t.row), warnings: [] }, ...out];
}

/** `key` added to `list` or taken out of it. */
export function toggle(list: string[], key: string): string[] {
  return list.includes(key) ? list.filter((k) => k !== key) : [...list, key];
}

const KEY_RE = /^[tcb]\d+$/;

export function parseLayout(p: { pin?: string; hide?: string; tfilter?: string; lanes?: string; nopy?: string; order?: string; gorder?: string; pyopen?: string }): TrackLayout {
  const keys = (text?: string) => (text ?? "").split(",").filter((k) => KEY_RE.test(k));
  const lanes = Number(p.lanes ?? 0);
  return { pinned: keys(p.pin), hidden: keys(p.hide), filter: p.tfilter ?? "", laneLimit: Number.isInteger(lanes) && lanes > 0 ? lanes : 0,
    hidePython: p.nopy === "1", order: keys(p.order), groupOrder: keys(p.gorder), pythonOpen: keys(p.pyopen) };
}

export function formatLayout(l: TrackLayout): { pin?: string; hide?: string; tfilter?: string; lanes?: string; nopy?: string; order?: string; gorder?: string; pyopen?: string } {
  return {
    pin: l.pinned.length ? l.pinned.join(",") : undefined, hide: l.hidden.length ? l.hidden.join(",") : undefined,
    tfilter: l.filter || undefined, lanes: l.laneLimit > 0 ? String(l.laneLimit) : undefined, nopy: l.hidePython ? "1" : undefined,
    order: l.order.length ? l.order.join(",") : undefined, gorder: l.groupOrder.length ? l.groupOrder.join(",") : undefined,
    pyopen: l.pythonOpen.length ? l.pythonOpen.join(",") : undefined,
  };
}

/** Rows whose full name (group and track) contains `text`, for the track finder; best (name starts with it) first. */
export function findTracks(groups: Group[], text: string): { group: Group; row: Row; name: string }[] {
  const t = text.trim().toLowerCase();
  if (!t) return [];
  const all = groups.flatMap((group) => group.rows.map((row) => ({ group, row, name: `${group.label} · ${row.label}` })));
  return all.filter((x) => x.name.toLowerCase().includes(t))
    .sort((a, b) => Number(!a.row.label.toLowerCase().startsWith(t)) - Number(!b.row.label.toLowerCase().startsWith(t)));
}

export interface ControlHooks {
  layout(): TrackLayout;
  set(layout: TrackLayout): void;
  /** Jumps to the first track whose name contains the text; false when none does. */
  find(text: string): boolean;
  names(): string[];
}

/** The toolbar's track controls: a name filter, a track finder, a lane limit and the hidden tracks' count. */
export function trackControls(hooks: ControlHooks, make: typeof import("../lib/dom").h): { root: HTMLElement; refresh(): void } {
  const filter = make("input", { type: "text", class: "track-filter", placeholder: "filter tracks", "aria-label": "Show only tracks whose name contains",
    title: "Show only the tracks whose name (or group) contains this text" });
  const list = make("datalist", { id: "track-names" });
  const finder = make("input", { type: "text", class: "track-finder", placeholder: "go to track…", list: "track-names", "aria-label": "Go to a track",
    title: "Type part of a track's name and press Enter to jump to it" });
  const lanes = make("select", { class: "lane-limit", "aria-label": "Lane limit", title: "Draw at most this many lanes per track" },
    ...LANE_LIMITS.map((n) => make("option", { value: n }, n ? `≤ ${n} lanes` : "all lanes")));
  const shown = make("button", { class: "show-hidden", title: "Show the hidden tracks again" });
  const python = make("input", { type: "checkbox", class: "hide-python", "aria-label": "Hide Python frames" });
  python.addEventListener("change", () => hooks.set({ ...hooks.layout(), hidePython: python.checked }));
  filter.addEventListener("input", () => hooks.set({ ...hooks.layout(), filter: filter.value }));
  finder.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    ev.preventDefault();
    finder.classList.toggle("error", !hooks.find(finder.value));
  });
  finder.addEventListener("change", () => { if (finder.value) finder.classList.toggle("error", !hooks.find(finder.value)); });
  finder.addEventListener("focus", () => list.replaceChildren(...hooks.names().map((n) => make("option", { value: n }))));
  lanes.addEventListener("change", () => hooks.set({ ...hooks.layout(), laneLimit: Number(lanes.value) }));
  shown.addEventListener("click", () => hooks.set({ ...hooks.layout(), hidden: [] }));
  const refresh = () => {
    const l = hooks.layout();
    if (filter.value !== l.filter) filter.value = l.filter;
    lanes.value = String(l.laneLimit);
    python.checked = l.hidePython;
    shown.hidden = !l.hidden.length;
    shown.textContent = `show ${l.hidden.length} hidden`;
  };
  refresh();
  const pythonToggle = make("label", { class: "toggle", title: "Draw framework threads without their Python frames (with_stack): ops only, each at its depth among ops" },
    python, "hide Python frames");
  return { root: make("span", { class: "track-controls" }, filter, finder, list, lanes, pythonToggle, shown), refresh };
}
