"""Session directories built in tests: a trace.json of given events and a sealed trace_info.pb."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.importer.trace_import import ImportOptions, import_trace

DATA = Path(__file__).resolve().parents[1] / "data"
BASE_NS = 1_700_000_000_000_000_000
HOST_PID = 4242


def x(
    name: str, ts: float, dur: float, *, cat: str = "cpu_op", tid: int = 1, pid: int = HOST_PID, **args: Any
) -> dict[str, Any]:
    """A complete (``X``) event; ``ts`` and ``dur`` in µs as Kineto writes them."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kernel(
    name: str, ts: float, dur: float, correlation: int, *, stream: int = 7, device: int = 0, **args: Any
) -> dict[str, Any]:
    return x(
        name,
        ts,
        dur,
        cat="kernel",
        tid=stream,
        pid=device,
        correlation=correlation,
        stream=stream,
        device=device,
        **args,
    )


def annotated_step() -> list[dict[str, Any]]:
    """One step: a recursive op under a Python frame, one kernel, and a device annotation over the
    whole step on the kernel's stream (as ``gpu_user_annotation`` rows are)."""
    return [
        x("ProfilerStep#6", 0, 100, cat="user_annotation"),
        x("train.py(10): step", 1, 90, cat="python_function"),
        x("aten::sum", 2, 60),
        x("aten::sum", 3, 50),
        x("cudaLaunchKernel", 4, 5, cat="cuda_runtime", correlation=3),
        kernel("reduce_kernel", 20, 10, correlation=3),
        x("ProfilerStep#6", 0, 100, cat="gpu_user_annotation", pid=0, tid=7, device=0, stream=7),
    ]


def write_session(
    root: Path,
    events: list[dict[str, Any]],
    *,
    rank: int = 0,
    pid: int = HOST_PID,
    world_size: int = 1,
    instance: str = "host",
    cycle: int = 0,
    edit: Any = None,
) -> Path:
    """A complete session under ``root`` holding ``events``; ``edit(info)`` may change its metadata."""
    session = layout.session_path(root, instance, pid, BASE_NS + cycle * 10**9, cycle)
    session.mkdir(parents=True)
    document = {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS, "traceEvents": events}
    (session / layout.TRACE_JSON).write_text(json.dumps(document))
    info = ti.new_trace_info()
    info.state = ti.SessionState.SESSION_STATE_COMPLETE
    ident = info.identity
    ident.session_id = f"{session.parent.name}/{session.name}"
    ident.instance_id, ident.hostname, ident.pid = instance, instance, pid
    ident.rank, ident.world_size, ident.rank_known, ident.cycle = rank, world_size, True, cycle
    info.profiler_base_time_ns = BASE_NS
    info.start_clocks.realtime_ns = BASE_NS
    info.stop_clocks.realtime_ns = BASE_NS + 10**9
    info.files.extend(ti.build_manifest(session))
    if edit is not None:
        edit(info)
    ti.write_trace_info(session, info)
    return session


def import_scenario(scenario: str, out: Path) -> Path:
    """Import every trace of ``tests/data/<scenario>`` into session directories under ``out``."""
    for trace in sorted((DATA / scenario).glob("*.json*")):
        import_trace(trace, ImportOptions(out_dir=out))
    return out


def ingested_scenario(scenario: str, root: Path) -> Path:
    """``tests/data/<scenario>`` imported into ``root/prof`` and ingested into the dataset ``root/ds``."""
    from kinetoscope.ingest import IngestOptions, ingest

    report = ingest(IngestOptions(profile_dir=import_scenario(scenario, root / "prof"), out=root / "ds"))
    assert report.status == "ok", [o.message for o in report.outcomes]
    return root / "ds"
