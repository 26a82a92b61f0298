// Light and dark themes: the page follows the system's `prefers-color-scheme` until the user picks
// one with the header's button (kept in this browser). Canvas drawings read their colours from the
// same CSS variables as the page, so both always agree.

export type Theme = "light" | "dark";
const STORAGE_KEY = "kinetoscope.theme";

export interface CanvasColors { group: string; gap: string; axisBg: string; axisText: string; tick: string; outline: string; }

export function storedTheme(): Theme | null {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return value === "light" || value === "dark" ? value : null;
  } catch {
    return null;
  }
}

/** The theme in force: the user's choice, else the system's. */
export function currentTheme(): Theme {
  return storedTheme() ?? (window.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}

export function applyTheme(theme: Theme, remember: boolean): void {
  document.documentElement.dataset.theme = theme;
  if (!remember) return;
  try { localStorage.setItem(STORAGE_KEY, theme); } catch { /* private mode: for this page only */ }
}

let cached: { theme: string; colors: CanvasColors } | null = null;

export function canvasColors(): CanvasColors {
  const theme = document.documentElement.dataset.theme ?? "light";
  if (cached?.theme === theme) return cached.colors;
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  const colors = {
    group: v("--tl-group", "#eef1f5"), gap: v("--tl-gap", "#e3e6ea"), axisBg: v("--panel", "#f7f8fa"),
    axisText: v("--text", "#333"), tick: v("--tl-tick", "#9aa3ad"), outline: v("--tl-outline", "#111"),
  };
  cached = { theme, colors };
  return colors;
}
