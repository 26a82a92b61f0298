// Track order: drag a track's name onto another track of the same group to move it there; the
// order is kept in the deep link (`order=t3,t1,...`) as the track keys of each reordered group.

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
