// Unit tests of the front end's pure modules (node's test runner on the esbuild output).
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Allocation, Track, Warning } from "../src/lib/api";
import { contrast, DARK_TEXT, fillRgb, LIGHT_TEXT, textOn } from "../src/lib/color";
import { axisTicks, codeSpans, formatBytes, formatDuration, spanNs } from "../src/lib/format";
import { clampWidth, defaultLabelWidth, defaultSideWidth } from "../src/widgets/panes";
import { formatLink, parseLink, withoutCode } from "../src/lib/link";
import { addMark, formatMarks, markRows, marksDocument, parseMarks } from "../src/lib/marks";
import { bandAt, offsetAt, stackAllocations } from "../src/pages/memlayout";
import { provenanceRows } from "../src/widgets/provenance";
import { rowTarget, schemaTables } from "../src/pages/sqlpage";
import { counterOrder, groupTracks, isConstant, sampleFile, warningApplies, withBusyRows } from "../src/lib/tracks";
import { clamp, drawnExtent, pan, toNs, toPx, zoom } from "../src/lib/viewport";

test("durations and sizes read naturally", () => {
  assert.equal(formatDuration(950), "950 ns");
  assert.equal(formatDuration(1_500), "1.50 µs");
  assert.equal(formatDuration(25_300_000), "25.3 ms");
  assert.equal(formatDuration(2_000_000_000), "2.00 s");
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(3 * 2 ** 30), "3.0 GiB");
});

test("a span between epoch times sent as strings is exact", () => {
  // as numbers, both round to a multiple of 256 ns: the difference would read 0 or 256
  assert.equal(spanNs("1760000000000000001", "1760000000000000129"), 128);
  assert.equal(spanNs(100, 350), 250);
});

test("axis ticks use a 1/2/5 step and one unit", () => {
  const { step, ticks } = axisTicks(0, 10_000_000, 5);
  assert.equal(step, 2_000_000);
  assert.deepEqual(ticks.map((t) => t.label), ["0 ms", "2 ms", "4 ms", "6 ms", "8 ms", "10 ms"]);
  assert.equal(axisTicks(1000, 1600, 3).ticks[0].label, "1.0 µs");
  assert.deepEqual(axisTicks(131_000_000, 132_000_000, 2).ticks.map((t) => t.label), ["131.0 ms", "131.5 ms", "132.0 ms"]);
  assert.equal(axisTicks(1_300_000_000, 1_320_000_000, 2).ticks[0].label, "1.30 s");
  assert.equal(axisTicks(0, 3e9, 3).ticks[1].label, "1 s");
});

test("zoom keeps the time under the cursor; pan moves by pixels", () => {
  const v = { start: 0, end: 1000, width: 100 };
  const z = zoom(v, 0.5, 25);
  assert.equal(toNs(z, 25), toNs(v, 25));
  assert.equal(z.end - z.start, 500);
  assert.deepEqual(pan(v, 10), { start: 100, end: 1100, width: 100 });
  assert.equal(toPx(v, 500), 50);
  const c = clamp({ start: -5000, end: -4000, width: 100 }, 0, 10_000);
  assert.ok(c.start >= -200 && c.end - c.start === 1000);
});

test("deep links round-trip, keep unrelated parameters and never carry a code", () => {
  const url = formatLink({ page: "timeline", start: 10.4, end: 99, sel: "9007199254740993", group: "rank", q: "aten::mm" }, "?code=abc&token=t&x=1");
  assert.ok(!url.includes("code") && !url.includes("token") && url.includes("x=1"));
  assert.equal(withoutCode("?code=abc"), "");
  assert.equal(withoutCode("?page=sql&code=abc&token=t"), "?page=sql");
  const back = parseLink(url);
  assert.deepEqual(back, { page: "timeline", start: 10, end: 99, sel: "9007199254740993", group: "rank", q: "aten::mm" });
  assert.equal(parseLink("?sel=42").sel, "42"); // a link of the numeric ids of before
  assert.equal(parseLink("?sel=0042").sel, "42");
  assert.equal(parseLink("?sel=-1").sel, undefined);
  assert.equal(parseLink("?sel=1e3").sel, undefined);
  assert.equal(parseLink("?page=bogus&group=bogus").page, "timeline");
});

const track = (id: number, rank: number, layer: string, extra: Partial<Track> = {}): Track => ({
  id, run: "r", rank, pid: 100 + rank, layer, tid: 100 + rank, device: layer === "framework" ? -1 : rank, stream: layer === "device" ? 7 : -1,
  events: 1, lanes: 1, name: "", session: "s", ...extra,
});

test("groupings: process by default, then device, rank and layer", () => {
  const tracks = [track(0, 0, "framework"), track(1, 0, "device"), track(2, 1, "framework"), track(3, 1, "runtime")];
  assert.deepEqual(groupTracks("process", tracks, [], []).map((g) => g.label), ["rank 0 · pid 100", "rank 1 · pid 101"]);
  assert.deepEqual(groupTracks("device", tracks, [], []).map((g) => g.label), ["device 0", "host", "device 1"]);
  assert.deepEqual(groupTracks("layer", tracks, [], []).map((g) => g.label), ["device", "CPU"]);
  const byThread = groupTracks("thread", tracks, [], []);
  assert.equal(byThread.length, 3); // the runtime track shares its host thread with framework ops
});

test("tracks keep the dataset's order and names: a thread's framework rows, then its runtime calls", () => {
  const tracks = [
    track(2, 0, "framework", { tid: 7, name: "thread 7 (python3)" }),
    track(0, 0, "framework", { name: "thread 100 (python3)" }),
    track(3, 0, "runtime", { tid: 7, device: -1, name: "thread 7 (python3) · runtime", lanes: 2 }),
    track(1, 0, "runtime", { device: -1, name: "thread 100 (python3) · runtime" }),
    track(4, 0, "device", { name: "stream 7" }),
  ];
  const [group] = groupTracks("process", tracks, [], []);
  assert.deepEqual(group.rows.map((r) => r.label), ["stream 7", "thread 100 (python3)", "thread 100 (python3) · runtime",
    "thread 7 (python3)", "thread 7 (python3) · runtime"]);
  assert.equal(group.rows[4].lanes, 2);
  const [busy] = withBusyRows([group]);
  assert.deepEqual(busy.rows.map((r) => r.kind).slice(0, 2), ["busy", "slice"]);
  assert.deepEqual(busy.rows[0].busy?.tracks, [4]);
  assert.equal(busy.rows[0].label, "device 0 · busy %");
  assert.equal(groupTracks("rank", tracks, [], [])[0].rows.length, 5);
  assert.equal(groupTracks("thread", [track(5, 0, "runtime", { tid: -1, name: "" })], [], [])[0].rows[0].label,
    "rank 0 · device 0 · runtime");
});

test("warnings attach to the rank and to the tracks their file feeds", () => {
  const w: Warning = { run: "r", rank: 1, session: "s", file: "device_1.pb", where: "", kind: "dropped_events", message: "m", count: 3 };
  assert.ok(warningApplies(w, { run: "r", rank: 1, layer: "device", device: 1 }));
  assert.ok(!warningApplies(w, { run: "r", rank: 1, layer: "framework", device: -1 }));
  assert.ok(!warningApplies(w, { run: "r", rank: 0, layer: "device", device: 1 }));
  const groups = groupTracks("process", [track(0, 0, "framework"), track(1, 1, "device")], [], [w]);
  assert.deepEqual(groups.map((g) => g.warnings.length), [0, 1]);
  assert.equal(groups[1].rows[0].warnings.length, 1);
});

test("a damaged sample file marks only the counters it holds, never the CPU rows for host_mem.pb", () => {
  const hostMem: Warning = { run: "r", rank: 1, session: "s", file: "host_mem.pb", where: "", kind: "truncated", message: "m", count: 1 };
  const counter = (name: string, device = -1) => ({ run: "r", rank: 1, layer: "counter", device, name });
  assert.ok(warningApplies(hostMem, counter("host memory used")));
  assert.ok(warningApplies(hostMem, counter("process resident memory")));
  assert.ok(!warningApplies(hostMem, counter("CPU 0 utilisation (%)")));
  assert.ok(!warningApplies(hostMem, counter("device 1 memory allocated", 1)));
  assert.ok(!warningApplies(hostMem, { run: "r", rank: 1, layer: "runtime", device: -1, name: "memory · host" }));
  assert.ok(warningApplies({ ...hostMem, file: "cpu_util.pb" }, counter("CPU 12 utilisation (%)")));
  assert.ok(!warningApplies({ ...hostMem, file: "cpu_util.pb" }, counter("host memory used")));
  assert.equal(sampleFile(counter("process CPU (% of one core)")), "cpu_util.pb");
  assert.equal(sampleFile(counter("some trace.json counter")), null);
});

test("allocations stack in allocation order and drop down when an older one is freed", () => {
  const a = (i: number, size: number, alloc: number, free: number | null): Allocation => ({ i, addr: i, size, alloc, free, stack_id: -1, event_id: "-1" });
  const { bands, total } = stackAllocations([a(0, 10, 0, 50), a(1, 5, 10, null), a(2, 7, 20, 40)], 100);
  assert.equal(offsetAt(bands[1], 15), 10);
  assert.equal(offsetAt(bands[2], 30), 15);
  assert.equal(offsetAt(bands[1], 60), 0);
  assert.equal(offsetAt(bands[2], 45), null);
  assert.equal(Math.max(...total.bytes), 22);
  assert.equal(bandAt(bands, 30, 16)?.alloc.i, 2);
  assert.equal(bandAt(bands, 30, 30), null);
});

test("label text contrasts at least 4.5:1 with every slice and block fill", () => {
  for (let i = 0; i < 2000; i++) {
    for (const alpha of [1, 0.35, 0.6, 0.9]) {
      const fill = fillRgb(`name ${i}`, alpha);
      const text = textOn(fill) === "#ffffff" ? LIGHT_TEXT : DARK_TEXT;
      assert.ok(contrast(fill, text) >= 4.5, `name ${i} at ${alpha}`);
    }
  }
});

test("pane widths scale with the window and leave the timeline at least half of it", () => {
  for (const w of [800, 1000, 1500, 2500]) assert.ok(w - defaultLabelWidth(w) - defaultSideWidth(w) >= w / 2, String(w));
  assert.equal(clampWidth(50, 120, 600), 120);
  assert.equal(clampWidth(900, 120, 600), 600);
});

test("counters: constant ones are flagged; CPUs in numeric order before memory", () => {
  const c = (name: string, unit: string, device = -1, min = 0, max = 1) =>
    ({ id: 0, run: "r", rank: 0, name, unit, device, samples: 9, min_value: min, max_value: max });
  assert.ok(isConstant(c("idle", "%", -1, 0, 0)) && !isConstant(c("busy", "%")));
  const sorted = [c("device 0 memory", "bytes", 0), c("host memory", "bytes"), c("CPU 10", "%"), c("CPU 2", "%")].sort(counterOrder);
  assert.deepEqual(sorted.map((x) => x.name), ["CPU 2", "CPU 10", "host memory", "device 0 memory"]);
});

test("reST inline code becomes code elements, the rest stays text", () => {
  assert.deepEqual(codeSpans("kinds (``Memcpy HtoD``, `Memset`) end"), [
    { text: "kinds (", code: false }, { text: "Memcpy HtoD", code: true }, { text: ", ", code: false },
    { text: "Memset", code: true }, { text: ") end", code: false }]);
});

test("compiled-kernel provenance reads as nodes and file:line function rows", () => {
  const rows = provenanceRows({ kind: "graph", graph: "fx1", files: ["kernels/k/k.py"], kernels: [
    { kernel: "cpp_fused_relu_0", post_grad_nodes: ["relu"], pre_grad_nodes: ["relu"],
      source: [{ file: "/m/model.py", line: 12, function: "forward", code: "return torch.relu(x)" }] },
    { kernel: "extern_kernels.addmm", post_grad_nodes: ["addmm"], pre_grad_nodes: ["linear"], source: [] },
    { kernel: "cpp_fused_1", post_grad_nodes: [], pre_grad_nodes: [], source: [{ file: "C:\\m\\x.py", line: -1, function: "", code: "" }] },
  ] });
  assert.deepEqual(rows[0], { kernel: "cpp_fused_relu_0", nodes: "relu",
    sources: [{ where: "model.py:12 forward", file: "/m/model.py", code: "return torch.relu(x)" }] });
  assert.equal(rows[1].nodes, "addmm (from linear)");
  assert.equal(rows[2].nodes, "no graph nodes recorded");
  assert.equal(rows[2].sources[0].where, "x.py:?");
});

test("marks survive the deep link, are named by the first free number and export epoch times", () => {
  let marks = addMark([], 2_000_000);
  marks = addMark(marks, 500_000);
  assert.deepEqual(marks.map((m) => m.name), ["M2", "M1"]);
  marks = [{ ...marks[0], name: "fwd, start~1" }, marks[1]];
  const text = formatMarks(marks);
  assert.deepEqual(parseMarks(text), marks);
  const link = formatLink({ ...parseLink(""), marks: text }, "");
  assert.deepEqual(parseMarks(parseLink(link).marks), marks);
  assert.deepEqual(parseMarks("abc,-5~x,,12~ok,7"), [{ ts: 7, name: "" }, { ts: 12, name: "ok" }]);
  assert.deepEqual(markRows(marks).map((r) => r.sincePrevious), ["", "+1.50 ms"]);
  assert.equal(addMark(marks, 1).find((m) => m.ts === 1)?.name, "M2"); // M1 is taken, M2 was renamed
  const doc = marksDocument(marks, "1760000000000000000") as { marks: { time_ns: string; offset_ns: number }[] };
  assert.deepEqual(doc.marks.map((m) => m.time_ns), ["1760000000000500000", "1760000000002000000"]);
});

test("SQL result rows open their event, else their time; the schema groups columns by table", () => {
  assert.deepEqual(rowTarget(["name", "id", "ts_ns"], ["aten::mm", "42", 1e18]), { id: "42" });
  assert.deepEqual(rowTarget(["name", "id"], ["aten::mm", 42]), { id: "42" });
  assert.deepEqual(rowTarget(["name", "id"], ["aten::mm", "9007199254740993"]), { id: "9007199254740993" });
  assert.deepEqual(rowTarget(["id", "ts_ns"], [-1, 5]), { ts: 5 });
  assert.deepEqual(rowTarget(["name", "ts_ns"], ["x", "1760000000000000000"]), { ts: 1760000000000000000 });
  assert.equal(rowTarget(["name", "total"], ["x", 3]), null);
  assert.equal(rowTarget(["id"], [null]), null);
  const tables = schemaTables([["events", "id", "int64", "", "Event id."], ["events", "ts_ns", "int64", "ns", "Start."],
    ["flows", "src", "int64", "", "Source."]]);
  assert.deepEqual([...tables.keys()], ["events", "flows"]);
  assert.deepEqual(tables.get("events")!.map((c) => c.column), ["id", "ts_ns"]);
});

test("the view reaches counter samples before the first event and after the last", () => {
  assert.deepEqual(drawnExtent({ span_ns: 5000, counters: [] }), { start: 0, end: 5000 });
  assert.deepEqual(drawnExtent({ span_ns: 5000, counters: [{ first_ts: -200, last_ts: 4000 }, { first_ts: 10, last_ts: 7000 }, {}] }),
    { start: -200, end: 7000 });
  assert.deepEqual(drawnExtent({ span_ns: 0, counters: [{ first_ts: null, last_ts: null }] }), { start: 0, end: 1000 });
});
