// Track order: drag a track's name onto another track of the same group to move it there; the
// order is kept in the deep link (`order=t3,t1,...`) as the track keys of each reordered group.
// While a track or header is dragged near the top or bottom edge of the track area, the area scrolls.

/** `order` with `groupKeys` (one group's row keys, as shown) rewritten so that `from` sits just
 *  before (or, with `after`, just after) `to`; the other groups' keys keep their place. */
export function moveTrack(order: string[], groupKeys: string[], from: string, to: string, after: boolean): string[] {
  if (from === to || !groupKeys.includes(from) || !groupKeys.includes(to)) return order;
  const rest = groupKeys.filter((k) => k !== from);
  const at = rest.indexOf(to) + (after ? 1 : 0);
  const moved = [...rest.slice(0, at), from, ...rest.slice(at)];
  const inGroup = new Set(groupKeys);
  return [...order.filter((k) => !inGroup.has(k)), ...moved];
}

/** `rows` sorted by where their key is in `order` (stable); rows it does not name keep their order after those it does. */
export function sortByOrder<T>(rows: T[], key: (row: T) => string, order: string[]): T[] {
  if (!order.length) return rows;
  const at = new Map(order.map((k, i) => [k, i]));
  return rows.map((row, i) => ({ row, i, o: at.get(key(row)) ?? Infinity }))
    .sort((a, b) => a.o - b.o || a.i - b.i).map((x) => x.row);
}

const MIME = "application/x-kinetoscope-track";

/** Makes a track label draggable onto the other labels of its group (`group`); `drop` is told which
 *  track went where. The label under the pointer shows a line where the track will land. */
export function dragToReorder(label: HTMLElement, key: string, group: string, drop: (from: string, to: string, after: boolean) => void): void {
  label.draggable = true;
  const lower = (ev: DragEvent) => ev.offsetY > label.clientHeight / 2;
  const clearMarks = () => label.classList.remove("drop-before", "drop-after");
  label.addEventListener("dragstart", (ev) => {
    ev.dataTransfer?.setData(MIME, `${group}\n${key}`);
    ev.dataTransfer?.setData("text/plain", key);
    if (ev.dataTransfer) ev.dataTransfer.effectAllowed = "move";
    label.classList.add("dragging");
  });
  label.addEventListener("dragend", () => label.classList.remove("dragging"));
  label.addEventListener("dragover", (ev) => {
    if (!ev.dataTransfer?.types.includes(MIME)) return;
    ev.preventDefault();
    ev.dataTransfer.dropEffect = "move";
    label.classList.toggle("drop-after", lower(ev));
    label.classList.toggle("drop-before", !lower(ev));
  });
  label.addEventListener("dragleave", clearMarks);
  label.addEventListener("drop", (ev) => {
    clearMarks();
    const [fromGroup, from] = (ev.dataTransfer?.getData(MIME) ?? "").split("\n");
    if (fromGroup !== group || !from) return;
    ev.preventDefault();
    drop(from, key, lower(ev));
  });
}

/** How close to the track area's top or bottom edge (px) a drag starts scrolling it. */
export const EDGE_PX = 48;
/** The scroll speed (px per frame) with the pointer on the edge or beyond it. */
export const MAX_SCROLL_PX = 24;

/** The scroll per frame for a drag at `y` in an area from `top` to `bottom` (client px): 0 away from
 *  the edges, growing to MAX_SCROLL_PX toward (and past) an edge; negative scrolls up. */
export function edgeScrollSpeed(y: number, top: number, bottom: number, edge = Math.min(EDGE_PX, (bottom - top) / 4)): number {
  if (!(edge > 0)) return 0;
  const near = (gap: number) => MAX_SCROLL_PX * Math.min(1, Math.max(0, (edge - gap) / edge));
  if (y < top + edge) return -Math.max(near(y - top), 1);
  if (y > bottom - edge) return Math.max(near(bottom - y), 1);
  return 0;
}

/** Milliseconds between two scroll steps of a drag at the edge. */
const STEP_MS = 16;

/** Scrolls `area` while a drag of one of its tracks or headers (`MIME`) hovers near its top or bottom
 *  edge (or beyond it), every STEP_MS, faster toward the edge, until the drag ends. (A timer, not
 *  animation frames: a browser may draw no frame while nothing but the drag changes.) */
export function scrollWhileDragging(area: HTMLElement): void {
  let y: number | null = null;
  let timer = 0;
  const step = () => {
    if (y === null) return;
    const rect = area.getBoundingClientRect();
    const speed = edgeScrollSpeed(y, rect.top, rect.bottom);
    if (speed) area.scrollTop += speed;
  };
  const stop = () => {
    y = null;
    window.clearInterval(timer);
    timer = 0;
  };
  area.addEventListener("dragstart", (ev) => {
    if (!ev.dataTransfer?.types.includes(MIME)) return;
    y = ev.clientY;
    timer = window.setInterval(step, STEP_MS);
  });
  document.addEventListener("dragover", (ev) => { if (timer) y = ev.clientY; });
  for (const type of ["drop", "dragend"]) document.addEventListener(type, stop, true);
}
