"""Profile a small built-in model with all four modes and show what the session holds.

Trains a small MLP for a few steps (on the GPU if there is one), profiles them with
DEVICE, RUNTIME, CPU_UTIL and HOST_MEMORY, and prints where the session directory went,
each file in it and what each file contains.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from kinetoscope.format.files import regular_file_inside
from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti


class DemoCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--out",
            type=Path,
            default=Path("profile_output"),
            help="profile_output_dir for the demo session (default: ./profile_output)",
        )
        parser.add_argument("--steps", type=int, default=4, help="profiled training steps (default: 4)")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.capture.demo import run_demo

        result = run_demo(args.out, steps=args.steps)
        for session in result.sessions:
            describe_session(session, sys.stdout)
        print("\nTop framework ops by self CPU time:")
        for name, self_us in result.top_ops:
            print(f"  {self_us / 1000:9.3f} ms  {name}")
        print(f"\nNext: kinetoscope dump {result.sessions[-1] / layout.TRACE_INFO}")
        return 0


def describe_session(path: Path, out: TextIO) -> None:
    info = ti.read_trace_info(path)
    ident = info.identity
    out.write(f"Session: {path}\n")
    out.write(
        f"  state {ti.state_name(info.state)}, rank {ident.rank}/{ident.world_size}, "
        f"host {ident.hostname}, pid {ident.pid}\n"
    )
    for entry in info.files:
        listed = regular_file_inside(path, entry.name)
        contents = _contents(listed) if listed is not None else "not a file inside the session: not read"
        out.write(f"  {entry.name:<22} {entry.size_bytes:>10,} bytes  {contents}\n")
    for outcome in info.modes:
        if outcome.reason:
            out.write(f"  note: {ti.mode_name(outcome.mode)}: {outcome.reason}\n")


def _contents(path: Path) -> str:
    if path.suffix != ".pb":
        return "framework trace (torch.profiler)" if path.name == layout.TRACE_JSON else ""
    result = read_packet_file(path)
    counters = sum(1 for p in result.packets if p.HasField("track_event"))
    kind = result.header.file_kind if result.header else "?"
    return f"{kind}: {len(result.packets)} packets, {counters} samples/events"


command = DemoCommand()
