"""Export cost of the system and device traces, against torch's own ``export_chrome_trace``.

For a real CPU profile of about ``--events`` events (optionally with ``profile_memory``),
measures in one process, medians of several repeats, each on a fresh profile:

- torch: ``prof.export_chrome_trace`` (writes trace.json);
- ours: converting that trace.json into ntrace.pb and device files, as ``Profiler.export_trace``
  does on a host without an accelerator (selective scan of trace.json, conversion, encoding);
- ours reading every event as a record, as it does on an accelerator host.

Prints the times and ours / torch: the extra export time the RUNTIME and DEVICE modes add.
``--trace FILE`` converts that trace both ways instead (a trace recorded on a GPU host, or
one from ``trace_gen.py``), to compare the two ways where runtime and device events abound;
the two ways alternate, so both see the same load. Times are CPU seconds of this process
(``time.process_time``: the work is single-threaded), which move less with the load of other
processes than wall seconds.

Usage: python benchmarks/export_event_traces.py [--events 100000] [--memory] [--repeats 5] [--trace FILE]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from kinetoscope.capture.system.system_trace import convert_trace
from kinetoscope.convert import conversion
from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets.packet_files import SessionPacketFiles
from kinetoscope.format.problems import ProblemLog

EVENTS_PER_STEP = 10  # aten::add, aten::mul and their children, as torch records them


def torch_export(path: Path, steps: int, memory: bool) -> float:
    x = torch.randn(8, 8)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=memory) as prof:
        for _ in range(steps):
            (x + 1) * 2
    start = time.process_time()
    prof.export_chrome_trace(str(path))
    return time.process_time() - start


def our_export(path: Path, out: Path, every_event: bool = False) -> float:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    header = pf.FileHeader(
        file_kind="", session_id="h_pid_1/t", instance_id="h", hostname="h", pid=1, rank=0, local_rank=0, world_size=1
    )
    files = SessionPacketFiles(out, header, pf.read_clocks_ns())
    options = conversion.ConvertOptions(base_ns=0, session_id="h_pid_1/t", max_events_per_device=1_000_000)
    start = time.process_time()
    convert_trace(path, files, options, ProblemLog(), every_event=every_event)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--memory", action="store_true", help="profile with profile_memory=True")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trace", type=Path, help="convert this trace both ways (no torch export)")
    args = parser.parse_args()
    if args.trace is not None:
        compare_ways(args.trace, args.repeats)
        return
    steps = max(1, args.events // EVENTS_PER_STEP)
    theirs, ours, records = [], [], []
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        trace = Path(tmp) / "trace.json"
        for _ in range(args.repeats):
            theirs.append(torch_export(trace, steps, args.memory))
            ours.append(our_export(trace, Path(tmp) / "out"))
            records.append(our_export(trace, Path(tmp) / "out", every_event=True))
        size_mb = trace.stat().st_size / 1e6
    torch_s, ours_s, records_s = statistics.median(theirs), statistics.median(ours), statistics.median(records)
    print(f"profile: ~{args.events} events, {size_mb:.1f} MB trace.json, profile_memory={args.memory}")
    print(f"torch export_chrome_trace: {torch_s:.3f} s")
    print(f"system + device traces:    {ours_s:.3f} s   ours / torch = {ours_s / torch_s:.2f}")
    print(f"  reading every event:     {records_s:.3f} s   ours / torch = {records_s / torch_s:.2f}")


def compare_ways(trace: Path, repeats: int) -> None:
    chosen: list[float] = []
    every: list[float] = []
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        for _ in range(repeats):  # alternately, so both ways see the same load
            chosen.append(our_export(trace, Path(tmp) / "out"))
            every.append(our_export(trace, Path(tmp) / "out", every_event=True))
    selective, records = statistics.median(chosen), statistics.median(every)
    print(f"{trace}: {trace.stat().st_size / 1e6:.1f} MB, medians of {repeats}, CPU seconds")
    print(f"selected events:       {selective:.3f} s")
    print(f"every event (records): {records:.3f} s   selected / every = {selective / records:.2f}")


if __name__ == "__main__":
    main()
