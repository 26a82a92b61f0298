// DOM building that only ever sets text: names and args from traces are data, never markup.
import { codeSpans } from "./format";

type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = String(value);
    else if (key === "text") el.textContent = String(value);
    else if (key === "style") el.style.cssText = String(value); // CSSOM, allowed by the CSP
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, ...children);
  return el;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

// Columns whose text may be long (kernel names, track names): cut with an ellipsis, full text on hover,
// so figures beside them keep their width.
const TEXT_COLUMNS = new Set(["name", "track", "message", "file", "session"]);

export function table(headers: string[], rows: Child[][], onRow?: (i: number) => void): HTMLTableElement {
  const cell = (c: Child, column: number) => TEXT_COLUMNS.has(headers[column])
    ? h("td", typeof c === "string" ? { class: "text", title: c } : { class: "text" }, c)
    : h("td", {}, c);
  const body = rows.map((cells, i) => {
    const tr = h("tr", onRow ? { class: "clickable", tabindex: 0, onclick: () => onRow(i) } : {}, ...cells.map(cell));
    if (onRow) tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") onRow(i); });
    return tr;
  });
  return h("table", { class: "grid" }, h("thead", {}, h("tr", {}, ...headers.map((t) => h("th", {}, t)))),
    h("tbody", {}, ...body));
}

/** reST-style inline code (``code`` or `code`) in a description, as <code> elements; the rest as text. */
export function inlineCode(text: string): Child[] {
  return codeSpans(text).map((s) => (s.code ? h("code", {}, s.text) : s.text));
}

/** The canvas sized to `width` x `height` CSS pixels at the screen's pixel density, and its context
 * drawing in CSS pixels. */
export function sizedContext(canvas: HTMLCanvasElement, width: number, height: number): CanvasRenderingContext2D {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d")!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}
