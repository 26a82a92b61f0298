// Deep links: the URL's query carries the page, time range, selection, grouping, search, marks,
// the track layout and the counters' display modes.
import type { EventId } from "./ids";
import { parseEventId } from "./ids";
import type { Grouping } from "./tracks";
import { GROUPINGS } from "./tracks";

export type Page = "timeline" | "memory" | "summary" | "sql" | "info" | "compare";
export const PAGES: Page[] = ["timeline", "memory", "summary", "sql", "info"];

export interface LinkState {
  page: Page; start?: number; end?: number; sel?: EventId; group: Grouping; q?: string; marks?: string; sql?: string;
  /** The area selection (`start,end,track,...`) and the track layout (`trackcontrol.ts`), as their link texts. */
  area?: string; pin?: string; hide?: string; tfilter?: string; lanes?: string; nopy?: string; order?: string; gorder?: string; pyopen?: string;
  /** "Align clocks" (clocks.ts): "1" on, "0" off; absent: the dataset's default. */
  clocks?: string;
  /** "Align ranks on this collective": `EVENT_ID,start` or `EVENT_ID,end`. */
  calign?: string;
  /** Each counter's display mode and scale (counters.ts): `c5:line:log,c7:rate`. */
  cmode?: string;
}
const TEXT_KEYS = ["area", "pin", "hide", "tfilter", "lanes", "nopy", "order", "gorder", "pyopen", "clocks", "calign", "cmode"] as const;

export function parseLink(search: string): LinkState {
  const p = new URLSearchParams(search);
  const num = (k: string) => (p.has(k) && p.get(k) !== "" && Number.isFinite(Number(p.get(k))) ? Number(p.get(k)) : undefined);
  const page = p.get("page") as Page;
  const group = p.get("group") as Grouping;
  return {
    page: PAGES.includes(page) || page === "compare" ? page : "timeline",
    start: num("start"), end: num("end"), sel: parseEventId(p.get("sel")),
    group: GROUPINGS.includes(group) ? group : "process",
    q: p.get("q") ?? undefined,
    ...(p.get("marks") ? { marks: p.get("marks")! } : {}),
    ...(p.get("sql") ? { sql: p.get("sql")! } : {}),
    ...Object.fromEntries(TEXT_KEYS.filter((k) => p.get(k)).map((k) => [k, p.get(k)!])),
  };
}

/** The address without the one-time code (or an older launch's token): it is used up on the first
 *  load, so it must not stay in the address bar, the history or any link copied from the page. */
export function withoutCode(search: string): string {
  const p = new URLSearchParams(search);
  for (const key of SECRET_KEYS) p.delete(key);
  const rest = p.toString();
  return rest ? "?" + rest : "";
}

const SECRET_KEYS = ["code", "token"];

/** Deep link for `state`, keeping unknown parameters of `base` (never a code). */
export function formatLink(state: LinkState, base: string): string {
  const p = new URLSearchParams(base);
  for (const key of ["page", "start", "end", "sel", "group", "q", "marks", "sql", ...SECRET_KEYS, ...TEXT_KEYS]) p.delete(key);
  p.set("page", state.page);
  if (state.start !== undefined && state.end !== undefined) {
    p.set("start", String(Math.round(state.start)));
    p.set("end", String(Math.round(state.end)));
  }
  if (state.sel !== undefined) p.set("sel", String(state.sel));
  if (state.group !== "process") p.set("group", state.group);
  if (state.q) p.set("q", state.q);
  if (state.marks) p.set("marks", state.marks);
  if (state.sql && state.page === "sql") p.set("sql", state.sql);
  for (const key of TEXT_KEYS) if (state[key]) p.set(key, state[key]!);
  return "?" + p.toString();
}
