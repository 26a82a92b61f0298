// The bottom drawer, full width under the timeline and the side panel (as in Perfetto): the area
// selection's table and flamegraph, search hits, SQL queries and the pivot. Resizable from its top
// edge, folded to its tab strip by a click on the active tab or a double-click on the edge; its
// height and fold are remembered.
import { append, h } from "../lib/dom";
import type { PaneSize } from "./panes";
import { clampWidth, dragHandle, loadPane, savePane } from "./panes";

export type DrawerTab = "selection" | "search" | "query" | "pivot";
export const DRAWER_TABS: [DrawerTab, string][] = [["selection", "Area"], ["search", "Search"], ["query", "Query"], ["pivot", "Pivot"]];
const MIN_PX = 120;

export function defaultDrawerHeight(windowPx: number): number {
  return Math.round(Math.min(420, Math.max(200, windowPx * 0.36)));
}

export class Drawer {
  readonly root = h("section", { class: "drawer", "aria-label": "Analysis drawer" });
  private readonly tabs = h("div", { class: "drawer-tabs", role: "tablist" });
  private readonly body = h("div", { class: "drawer-body" });
  private size: PaneSize;
  tab: DrawerTab = "selection";
  /** Called with the tab each time one is shown. */
  onShow: (tab: DrawerTab) => void = () => undefined;

  constructor(private readonly panels: Record<DrawerTab, HTMLElement>, private readonly resized: () => void) {
    this.size = loadPane("drawer", defaultDrawerHeight(window.innerHeight));
    if (localStorage.getItem("kinetoscope.pane.drawer") === null) this.size.collapsed = true; // opens with its first content
    const handle = h("div", { class: "drawer-resize", title: "Drag to resize the drawer; double-click to fold it" });
    dragHandle(handle, -1, {
      start: () => (this.size.collapsed ? 0 : this.size.width), fold: () => this.fold(!this.size.collapsed),
      end: () => savePane("drawer", this.size),
      resize: (px) => { this.size = { width: clampWidth(px, MIN_PX, window.innerHeight * 0.8), collapsed: false }; this.apply(); },
    }, "y");
    for (const [tab, label] of DRAWER_TABS) {
      append(this.tabs, h("button", { "data-tab": tab, role: "tab", onclick: () => (this.tab === tab && !this.size.collapsed ? this.fold(true) : this.show(tab)) }, label));
    }
    const fold = h("button", { class: "fold-drawer", title: "Fold or open the drawer", onclick: () => this.fold(!this.size.collapsed) });
    append(this.tabs, fold);
    append(this.root, handle, this.tabs, this.body);
    this.show(this.tab, false);
  }

  get open(): boolean {
    return !this.size.collapsed;
  }

  /** Shows `tab` (opening the drawer unless `open` is false). */
  show(tab: DrawerTab, open = true): void {
    this.tab = tab;
    this.body.replaceChildren(this.panels[tab]);
    for (const b of this.tabs.querySelectorAll<HTMLElement>("button[data-tab]")) {
      b.classList.toggle("active", b.dataset.tab === tab);
      b.setAttribute("aria-selected", String(b.dataset.tab === tab));
    }
    this.onShow(tab);
    if (open && this.size.collapsed) this.fold(false);
    else this.apply();
  }

  fold(collapsed: boolean): void {
    this.size = { ...this.size, collapsed };
    savePane("drawer", this.size);
    this.apply();
  }

  private apply(): void {
    this.root.style.height = this.size.collapsed ? "" : `${this.size.width}px`;
    this.root.classList.toggle("folded", this.size.collapsed);
    const fold = this.tabs.querySelector<HTMLElement>(".fold-drawer");
    if (fold) fold.textContent = this.size.collapsed ? "▴" : "▾";
    this.resized();
  }
}
