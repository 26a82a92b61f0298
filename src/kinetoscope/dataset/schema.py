"""The dataset's tables, declared once: every column with its type, unit and description.

Ingest writes these tables, ``docs/tables.md`` is generated from them
(``python -m kinetoscope.dataset.schema``), the ``schema`` table carries them inside every
dataset, and the SQL layer creates one view per table. Partitioned tables are stored as
``<table>/run=<run>/rank=<rank>/part-<n>.parquet``: their ``run`` and ``rank`` columns live
in the directory names (hive partitioning), not in the files.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = 5  # 2: events.kind, op_id, self_ns, track_id, lane; flows.found_by; tracks. 3: sessions.device_memory.
# 4: segments, allocator_trace
# 5: self_ns counts host collective scopes (nccl:*, gloo:*) in the op tree.
SCHEMA_METADATA_KEY = b"kinetoscope.schema_version"

_DICT = pa.dictionary(pa.int32(), pa.string())


@dataclass(frozen=True)
class Column:
    """One column: its name, Arrow type, unit (empty when it has none) and what it means."""

    name: str
    type: pa.DataType
    description: str
    unit: str = ""


@dataclass(frozen=True)
class Table:
    """One table of the dataset."""

    name: str
    description: str
    columns: tuple[Column, ...]
    partitioned: bool

    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]

    def file_schema(self) -> pa.Schema:
        """The schema of the Parquet files: partitioned tables leave run and rank to the path."""
        columns = self.columns if not self.partitioned else self.columns[2:]
        fields = [pa.field(c.name, c.type, nullable=True) for c in columns]
        return pa.schema(fields, metadata={SCHEMA_METADATA_KEY: str(SCHEMA_VERSION).encode()})

    def full_schema(self) -> pa.Schema:
        """The schema a reader sees, partition columns included."""
        return pa.schema([pa.field(c.name, c.type) for c in self.columns])

    def empty(self) -> pa.Table:
        return self.full_schema().empty_table()


RUN = Column("run", pa.string(), "Run: one profile tree ingested under this name (default: its directory name).")
RANK = Column("rank", pa.int32(), "Global rank of the process that wrote the session.")
SESSION = Column("session", pa.string(), "Session id `<instance>_pid_<pid>/<timestamp>`.")


def _table(name: str, description: str, *columns: Column, partitioned: bool = True) -> Table:
    return Table(name, description, (RUN, RANK, *columns), partitioned)


EVENTS = _table(
    "events",
    "One row per slice or instant of every layer: framework (Python functions, ops, annotations), "
    "runtime (API and driver calls, synchronizations, allocator events) and device (kernels, copies, "
    "sets, device annotations). Source: each session's `trace.json`.",
    Column(
        "id",
        pa.int64(),
        "Event id, unique within the dataset: rank << 40 | session slot << 32 | event index in trace.json.",
    ),
    SESSION,
    Column("layer", _DICT, "`framework`, `runtime` or `device`."),
    Column(
        "kind",
        _DICT,
        "What the event is (one rule for every sink, see docs/model.md): device `kernel`, `memcpy`, `memset`, "
        "`device_annotation`; runtime `runtime`, `driver`, `sync`, `allocation`, `collective`; framework `op`, "
        "`python`, `user_annotation`; `marker` for the profiler's own rows and unknown categories.",
    ),
    Column("name", _DICT, "Event name (op, function, API call or kernel)."),
    Column("category", _DICT, "Kineto category (`cat`): cpu_op, python_function, cuda_runtime, kernel, ..."),
    Column("ts_ns", pa.int64(), "Start time, CLOCK_REALTIME (unix epoch).", "ns"),
    Column("dur_ns", pa.int64(), "Duration; 0 for instants.", "ns"),
    Column("pid", pa.int64(), "Host process id (for device rows: the process that launched the work)."),
    Column("tid", pa.int64(), "Host thread id; -1 for device rows."),
    Column("device", pa.int32(), "Device index; -1 for host-only rows."),
    Column("stream", pa.int64(), "Device stream (or queue); -1 for host rows."),
    Column("correlation", pa.int64(), "Kineto correlation id joining a runtime call to its device work; -1 if none."),
    Column("external_id", pa.int64(), "Kineto External id joining a framework op to the calls it made; -1 if none."),
    Column(
        "collective",
        _DICT,
        "Collective operation this row belongs to (`allreduce`, `sendrecv`, ...): its `Collective name` "
        "metadata, else for device rows the operation a NCCL/RCCL kernel name spells; empty if none.",
    ),
    Column("track_id", pa.int64(), "The timeline row the event is drawn on (`tracks.track_id`)."),
    Column(
        "lane",
        pa.int32(),
        "Row within its track: framework rows their nesting depth; runtime and device rows packed from "
        "their own track's intervals (0 unless they overlap).",
    ),
    Column("stack_id", pa.int64(), "Innermost Python frame active at the event (`frames.stack_id`); -1 if none."),
    Column("depth", pa.int32(), "Nesting depth on its track (thread or stream); 0 is the outermost."),
    Column("parent_id", pa.int64(), "Id of the enclosing event on the same track; -1 at the top."),
    Column(
        "op_id",
        pa.int64(),
        "Id of the nearest enclosing framework op or annotation, Python frames skipped; device rows take "
        "the op of the runtime call that launched them; -1 if none.",
    ),
    Column(
        "launch_id",
        pa.int64(),
        "Id of the runtime call that launched this device work (or synchronization) by correlation id; -1 if "
        "none. Device work with a correlation id but no launch was launched before the trace began.",
    ),
    Column(
        "self_ns",
        pa.int64(),
        "Self time as torch's `key_averages` counts it: for ops, annotations, host collective scopes "
        "(`nccl:*`, `gloo:*`) and runtime calls the duration minus that of their nearest op-tree descendants "
        "(Python frames between them do not count); for "
        "other rows the duration minus their direct children.",
        "ns",
    ),
    Column("step", pa.int32(), "Number N of the `ProfilerStep#N` the event starts in; -1 outside steps."),
    Column(
        "args",
        pa.string(),
        "The event's `args` as recorded: its JSON object text on one line (keys, order and numbers as written; "
        "ids lifted into columns included), `{}` when it has none.",
    ),
)

FLOWS = _table(
    "flows",
    "Edges between events: framework op to the runtime calls it made (External id), runtime call to "
    "the device work it caused (correlation / `ac2g`), forward op to backward op (`fwdbwd`), and other "
    "Kineto flow events.",
    Column("src_id", pa.int64(), "Id of the event the edge starts at (`events.id`)."),
    Column("dst_id", pa.int64(), "Id of the event the edge ends at (`events.id`)."),
    Column(
        "kind",
        _DICT,
        "`framework_runtime`, `runtime_device`, `runtime_sync`, `runtime_runtime` (a host call to the device-side "
        "call sharing its correlation id), `framework_device`, `fwd_bwd`, or a Kineto flow name.",
    ),
    Column(
        "found_by",
        _DICT,
        "How the edge was found: `external_id`, `correlation`, `enclosing_op` (a runtime call with no usable "
        "External id, bound to the op it runs inside) or `flow_event` (Kineto's flow events).",
    ),
)

TRACKS = _table(
    "tracks",
    "Timeline rows, as the system and device traces draw them: a host thread's framework rows; its "
    "runtime calls, driver calls and collectives; a device's synchronizations; an allocator; a device "
    "stream's work, and its annotations.",
    Column("track_id", pa.int64(), "Track id, unique within the dataset (`events.track_id`)."),
    SESSION,
    Column("layer", _DICT, "`framework`, `runtime` or `device`."),
    Column("name", pa.string(), "Display name: the thread's `thread_name` metadata where the trace has it."),
    Column("pid", pa.int64(), "Host process id."),
    Column("tid", pa.int64(), "Host thread id; -1 for device, synchronization and allocator tracks."),
    Column("device", pa.int32(), "Device index; -1 for host tracks."),
    Column("stream", pa.int64(), "Device stream; -1 for host tracks."),
    Column("sort", pa.int32(), "Display order within the session."),
    Column("lanes", pa.int32(), "How many lanes (rows) the track's events need."),
)

FRAMES = _table(
    "frames",
    "Python call stacks as a tree: one row per distinct frame path. Source: `python_function` events "
    "(`with_stack=True`), legacy `Call stack` args, and memory snapshot frames.",
    Column("stack_id", pa.int64(), "Id of this frame path, unique within the dataset."),
    Column("parent_id", pa.int64(), "Id of the calling frame path; -1 at the root."),
    Column("name", pa.string(), "Function name."),
    Column("file", pa.string(), "Source file as recorded."),
    Column("line", pa.int32(), "Line number; -1 if unknown."),
)

COUNTERS = _table(
    "counters",
    "Sampled values over time: CPU utilisation per core and of the process (`cpu_util.pb`), host "
    "memory (`host_mem.pb`), device memory (device traces, and the allocator totals of `[memory]` "
    "events), and counters recorded in `trace.json`.",
    SESSION,
    Column(
        "name", _DICT, "Counter name, e.g. `CPU 0 utilisation (%)`, `host memory used`, `device 0 memory allocated`."
    ),
    Column("ts_ns", pa.int64(), "Sample time, CLOCK_REALTIME (unix epoch).", "ns"),
    Column("value", pa.float64(), "Sampled value, in `unit`."),
    Column("unit", _DICT, "`%`, `bytes`, or the unit the source gives."),
    Column("device", pa.int32(), "Device index; -1 for host counters."),
)

ALLOCATIONS = _table(
    "allocations",
    "Memory blocks from allocator snapshots (`memory_snapshot_rank<N>.pickle`), placed on the trace "
    "clock and joined to the allocator events in `events`.",
    SESSION,
    Column("addr", pa.int64(), "Block address."),
    Column("size_bytes", pa.int64(), "Block size.", "bytes"),
    Column("alloc_ts_ns", pa.int64(), "Allocation time, CLOCK_REALTIME; -1 if allocated before recording began.", "ns"),
    Column("free_ts_ns", pa.int64(), "Free time, CLOCK_REALTIME; -1 if not freed while recording.", "ns"),
    Column("device", pa.int32(), "Device index; -1 for host memory."),
    Column("stack_id", pa.int64(), "Python stack that allocated it (`frames.stack_id`); -1 if unknown."),
    Column("event_id", pa.int64(), "The allocator event in `events` it joins to (address and time); -1 if none."),
)

SNAPSHOT = Column("snapshot", pa.string(), "Snapshot file name within the session (`memory_snapshot_rank<N>.pickle`).")

SEGMENTS = _table(
    "segments",
    "The caching allocator's state at each snapshot: one row per block of every segment (the memory "
    "it reserved from the device, cut into blocks). Source: a snapshot's `segments`; see docs/viewer.md "
    "(Memory) for the state at earlier times.",
    SESSION,
    SNAPSHOT,
    Column("device", pa.int32(), "Device index; -1 for host memory (kinetoscope's CPU snapshots)."),
    Column("segment_addr", pa.int64(), "Segment start address."),
    Column("segment_size_bytes", pa.int64(), "Segment size (`total_size`): memory reserved from the device.", "bytes"),
    Column("stream", pa.int64(), "Stream the segment serves (the allocator keeps a pool per stream)."),
    Column("pool", pa.string(), "`segment_pool_id` as `a,b` (`0,0` the default pool; CUDA graphs use others)."),
    Column("segment_type", _DICT, "`small` (blocks up to 1 MiB, from 2 MiB segments) or `large`; empty if unknown."),
    Column("is_expandable", pa.bool_(), "Whether the segment is an expandable segment (grown by mapping pages)."),
    Column("block_addr", pa.int64(), "Block address; -1 for a segment listed without blocks."),
    Column("block_size_bytes", pa.int64(), "Block size as the allocator cut it (rounded up).", "bytes"),
    Column("requested_size_bytes", pa.int64(), "Bytes the allocation asked for (at most the block size).", "bytes"),
    Column(
        "state",
        _DICT,
        "`active_allocated`, `active_pending_free` (freed, waiting for a stream that used it: `record_stream`) "
        "or `inactive` (cached free memory).",
    ),
    Column("frames", pa.string(), "Stack that allocated the block, innermost first, `name file:line` per line."),
)

ALLOCATOR_TRACE = _table(
    "allocator_trace",
    "Every entry of each snapshot's `device_traces` (recorded while memory history was on), in order: "
    "allocations, frees and segment changes, from which the allocator state at an earlier time is rebuilt.",
    SESSION,
    SNAPSHOT,
    Column("device", pa.int32(), "Device index; -1 for host memory."),
    Column("seq", pa.int64(), "Position of the entry in its device's trace (0 is the oldest kept)."),
    Column(
        "action",
        _DICT,
        "`alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free`, `segment_map`, "
        "`segment_unmap` (expandable segments), `snapshot` or `oom`.",
    ),
    Column("ts_ns", pa.int64(), "Entry time (`time_us`), CLOCK_REALTIME; -1 when the entry has none.", "ns"),
    Column("addr", pa.int64(), "Block or segment address."),
    Column("size_bytes", pa.int64(), "Size: requested bytes for block actions, mapped bytes for segments.", "bytes"),
    Column("stream", pa.int64(), "Stream of the entry."),
    Column("stack_id", pa.int64(), "Python stack of the entry (`frames.stack_id`); -1 if none."),
)

SESSIONS = _table(
    "sessions",
    "One row per ingested session directory (one profiling cycle of one process).",
    SESSION,
    Column("path", pa.string(), "Session directory, as given to ingest."),
    Column("instance", pa.string(), "Instance (machine) id."),
    Column("host", pa.string(), "Host name."),
    Column("pid", pa.int64(), "Process id."),
    Column("local_rank", pa.int32(), "Rank within the host."),
    Column("world_size", pa.int32(), "Number of ranks in the job."),
    Column("backend", pa.string(), "Process-group backend (`nccl`, `gloo`, ...); empty when none."),
    Column("state", pa.string(), "`COMPLETE`, `IN_PROGRESS` (interrupted) or `FAILED`."),
    Column("start_ns", pa.int64(), "Profiler start, CLOCK_REALTIME.", "ns"),
    Column("stop_ns", pa.int64(), "Profiler stop, CLOCK_REALTIME.", "ns"),
    Column("modes", pa.string(), "Capture modes, comma separated (`DEVICE,RUNTIME,CPU_UTIL,HOST_MEMORY`)."),
    Column("torch_version", pa.string(), "torch version that captured the session."),
    Column("kinetoscope_version", pa.string(), "kinetoscope version that captured the session."),
    Column(
        "device_name",
        pa.string(),
        "Name of the session's devices from the trace's `deviceProperties` (distinct names, comma separated); "
        "empty when the trace has none.",
    ),
    Column(
        "device_memory",
        pa.string(),
        "Total memory of each device in the trace's `deviceProperties` (`totalGlobalMem`), bytes, as a JSON "
        'object from device index to bytes (`{"0":34089730048}`); `{}` when the trace has none.',
    ),
    Column("slot", pa.int32(), "Session slot within its rank (bits 32-39 of event ids)."),
    Column("event_count", pa.int64(), "Rows this session contributed to `events`."),
    Column("dropped_events", pa.int64(), "Events dropped at capture (all devices); 0 if none."),
    partitioned=False,
)

FILES = _table(
    "files",
    "One row per file of each session: what the manifest promised and what was found.",
    SESSION,
    Column("name", pa.string(), "File name relative to the session directory."),
    Column("size_bytes", pa.int64(), "Size found on disk; -1 when missing.", "bytes"),
    Column("sha256", pa.string(), "SHA-256 recorded in the manifest; empty if unlisted."),
    Column("status", pa.string(), "`ok`, `missing`, `truncated`, `corrupt`, `partial` or `outside` (not read)."),
    partitioned=False,
)

WARNINGS = _table(
    "warnings",
    "Everything skipped, dropped, truncated or doubtful during capture or ingest, with where and why.",
    SESSION,
    Column("file", pa.string(), "File concerned, relative to the session directory; empty for the session."),
    Column("where", pa.string(), "Place in the file: event index, byte offset, or table."),
    Column("kind", pa.string(), "Short machine-readable kind (`dropped_events`, `truncated`, `bad_event`, ...)."),
    Column(
        "severity",
        pa.string(),
        "`warning` (something was lost, damaged or is doubtful) or `note` (information, such as why a "
        "capture mode recorded nothing).",
    ),
    Column("message", pa.string(), "What is wrong and what to do about it."),
    Column("count", pa.int64(), "How many occurrences this row stands for."),
    partitioned=False,
)

KERNELS = _table(
    "kernels",
    "Compiled code (torch.compile) that ran in a session, one row per name identifying it in the trace and "
    "entry of that name. Source: each session's `kernels/index.json` (docs/kernels.md).",
    SESSION,
    Column(
        "name",
        pa.string(),
        "Name identifying the code in the trace: a kernel's (`cpp_fused_relu_0`, a Triton kernel) or a compiled "
        "graph's call (`## Call CompiledFxGraph <key> ##`).",
    ),
    Column("kind", pa.string(), "`graph` (a compiled graph's wrapper), `cpp` or `triton` (a kernel)."),
    Column("graph", pa.string(), "FX cache key of the compiled graph the entry belongs to; empty if unknown."),
    Column(
        "in_trace",
        pa.bool_(),
        "Whether the name itself occurs in `trace.json` (CPU kernels run inside their graph's event and do not).",
    ),
    Column(
        "files",
        pa.string(),
        "JSON list of the entry's files, relative to the session directory (`kernels/<cache key>/...`).",
    ),
    Column(
        "provenance",
        pa.string(),
        "JSON object as in the index: for a kernel `{post_grad_nodes, pre_grad_nodes, source: [{file, line, "
        "function, code}]}`; for a graph one such object per kernel or extern call it makes; empty when the "
        "index has none (tracking off, or format 1).",
    ),
    partitioned=False,
)

SCHEMA = Table(
    "schema",
    "The dataset's own description: one row per column of every table.",
    (
        Column("table", pa.string(), "Table name."),
        Column("column", pa.string(), "Column name."),
        Column("type", pa.string(), "Arrow type."),
        Column("unit", pa.string(), "Unit; empty when the column has none."),
        Column("description", pa.string(), "What the column means."),
    ),
    partitioned=False,
)

TABLES: tuple[Table, ...] = (
    EVENTS, FLOWS, TRACKS, FRAMES, COUNTERS, ALLOCATIONS, SEGMENTS, ALLOCATOR_TRACE,
    SESSIONS, FILES, WARNINGS, KERNELS, SCHEMA,
)
TABLES_BY_NAME = {table.name: table for table in TABLES}
PARTITIONED = tuple(t for t in TABLES if t.partitioned)


def type_name(data_type: pa.DataType) -> str:
    if pa.types.is_dictionary(data_type):
        return f"{data_type.value_type} (dictionary)"
    return str(data_type)


def schema_table() -> pa.Table:
    """The ``schema`` table: one row per column of every table."""
    rows = [(t.name, c.name, type_name(c.type), c.unit, c.description) for t in TABLES for c in t.columns]
    names = SCHEMA.column_names()
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)}, schema=SCHEMA.full_schema())


def render_markdown() -> str:
    """The reference page ``docs/tables.md``, generated from the declarations above."""
    lines = [
        "# Dataset tables",
        "",
        "<!-- Generated from src/kinetoscope/dataset/schema.py by "
        "`python -m kinetoscope.dataset.schema > docs/tables.md`; do not edit by hand. -->",
        "",
        f"Schema version {SCHEMA_VERSION}. Partitioned tables are stored as "
        "`<table>/run=<run>/rank=<rank>/part-<n>.parquet` (hive partitioning: `run` and `rank` come "
        "from the path); the others as `<table>/part-<n>.parquet`. All times are CLOCK_REALTIME "
        "nanoseconds since the unix epoch.",
    ]
    for table in TABLES:
        layout = "partitioned by run and rank" if table.partitioned else "not partitioned"
        lines += ["", f"## {table.name}", "", f"{table.description} ({layout})", ""]
        lines += ["| column | type | unit | description |", "|---|---|---|---|"]
        lines += [f"| `{c.name}` | {type_name(c.type)} | {c.unit} | {c.description} |" for c in table.columns]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
