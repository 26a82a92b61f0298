// Resizable, foldable panes: widths that scale with the window, drag handles, and remembered sizes.

export interface PaneSize { width: number; collapsed: boolean; }

/** Default widths for a window `w` px wide: the timeline keeps at least half of it. */
export function defaultLabelWidth(w: number): number {
  return Math.round(Math.min(280, Math.max(150, w * 0.17)));
}

export function defaultSideWidth(w: number): number {
  return Math.round(Math.min(460, Math.max(240, w * 0.27)));
}

export function clampWidth(width: number, min: number, max: number): number {
  return Math.round(Math.min(Math.max(width, min), Math.max(min, max)));
}

export function loadPane(key: string, fallback: number): PaneSize {
  try {
    const saved = JSON.parse(localStorage.getItem(`kinetoscope.pane.${key}`) ?? "null") as PaneSize | null;
    if (saved && Number.isFinite(saved.width)) return { width: saved.width, collapsed: !!saved.collapsed };
  } catch {
    // a damaged entry: fall back to the default
  }
  return { width: fallback, collapsed: false };
}

export function savePane(key: string, size: PaneSize): void {
  try {
    localStorage.setItem(`kinetoscope.pane.${key}`, JSON.stringify(size));
  } catch {
    // storage may be disabled: the size lasts for this page only
  }
}

export interface DragActions {
  /** The width when the drag starts; `resize` gets it plus the pointer's travel. */
  start(): number;
  resize(width: number): void;
  end(): void;
  fold(): void;
}

/** Makes `handle` a horizontal drag handle (`sign` -1 when the pane grows leftwards, or upwards with
 *  `axis` "y"); a double-click folds. */
export function dragHandle(handle: HTMLElement, sign: 1 | -1, actions: DragActions, axis: "x" | "y" = "x"): void {
  handle.addEventListener("mousedown", (down) => {
    down.preventDefault();
    down.stopPropagation();
    const from = actions.start();
    const move = (ev: MouseEvent) => actions.resize(from + sign * (axis === "x" ? ev.clientX - down.clientX : ev.clientY - down.clientY));
    const up = () => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      document.body.classList.remove("resizing");
      actions.end();
    };
    document.body.classList.add("resizing");
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  });
  handle.addEventListener("dblclick", () => actions.fold());
}
