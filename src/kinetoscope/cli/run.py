"""Profile an unmodified Python program: kinetoscope run [OPTIONS] -- COMMAND...

Runs COMMAND (`python train.py`, `python -m module`, `torchrun ...`: every rank is
profiled) with kinetoscope injected at interpreter start, through a `sitecustomize` put
first on PYTHONPATH and configured by KINETOSCOPE_* variables; the program's code is not
changed. Steps are counted at the end of each optimizer step (or each return of
--step-fn), from 0: step 0, the first iteration, is never recorded. --steps 10-15 records
steps 10 to 15 after one warm-up step; --skip-first/--wait/--warmup/--active/--repeat follow
torch.profiler.schedule instead. With --on-demand nothing is recorded until
`kinetoscope trigger` asks. With --flight-recorder memory history is kept from the
start and a snapshot session is written on an out-of-memory error or on SIGUSR2
(--dump-signal); the program goes on after a signal.

Then says where each rank's session went and exits with COMMAND's exit status.
--print-env prints the variables instead, for launchers that cannot take a wrapper.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from kinetoscope._errors import CommandError
from kinetoscope.capture import run_settings as rs
from kinetoscope.format.session_files import session_dir as layout

INJECT_DIR = Path(__file__).resolve().parents[1] / "capture" / "_inject"


class RunCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--steps", metavar="A-B", help=f"steps to record, FIRST-LAST (default {rs.DEFAULT_STEPS})")
        for name in rs.SCHEDULE_ENV:
            flag = "--" + name.replace("_", "-")
            parser.add_argument(flag, type=int, dest=name, metavar="N", help=f"torch.profiler.schedule's {name}")
        parser.add_argument("--modes", default=",".join(rs.DEFAULT_MODES),
                            help=f"comma-separated, of {','.join(rs.MODE_NAMES)} (default %(default)s)")
        parser.add_argument("--out", type=Path, default=Path(rs.DEFAULT_OUT),
                            help="profile_output_dir for every rank's sessions (default %(default)s)")
        parser.add_argument("--with-stack", action="store_true", help="record Python stacks")
        parser.add_argument("--record-shapes", action="store_true", help="record operator input shapes")
        parser.add_argument("--memory", action="store_true",
                            help="record memory history and write a snapshot into the last session")
        parser.add_argument("--step-fn", metavar="MODULE:FUNCTION",
                            help="count a step at each return of this function (a module the program imports)")
        parser.add_argument("--on-demand", action="store_true",
                            help="listen for `kinetoscope trigger`; without --steps nothing is recorded until then")
        parser.add_argument("--flight-recorder", action="store_true",
                            help="keep memory history from the start; dump a snapshot session on an "
                                 "out-of-memory error or on --dump-signal (profiles no steps unless --steps)")
        parser.add_argument("--dump-signal", default=rs.DEFAULT_DUMP_SIGNAL, metavar="SIGNAL",
                            help="signal that makes the flight recorder dump, program going on (default %(default)s)")
        parser.add_argument("--flight-max-entries", type=int, default=rs.DEFAULT_FLIGHT_MAX_ENTRIES, metavar="N",
                            help="the flight recorder keeps the last N allocator events (default %(default)s)")
        parser.add_argument("--print-env", action="store_true",
                            help="print the environment variables that do the same, and run nothing")
        parser.add_argument("program", nargs=argparse.REMAINDER, metavar="COMMAND",
                            help="-- then the program and its arguments")

    def run(self, args: argparse.Namespace) -> int:
        settings = settings_from_args(args)
        env = injected_env(settings, os.environ)
        if args.print_env:
            for name in sorted(env.keys() - os.environ.keys() | {"PYTHONPATH"}):
                print(f"export {name}={shlex.quote(env[name])}")
            return 0
        command = args.program[1:] if args.program[:1] == ["--"] else args.program
        if not command:
            raise CommandError("no command: give it after --, e.g. kinetoscope run --steps 10-15 -- python train.py")
        started_ns = time.time_ns()
        forwarded = (rs.parse_dump_signal(settings.dump_signal),) if settings.flight_recorder else ()
        code = run_child(command, env, forwarded)
        report_sessions(settings, started_ns, sys.stderr)
        return code


def settings_from_args(args: argparse.Namespace) -> rs.RunSettings:
    """The options as ``RunSettings``, checked by the same rules as the variables."""
    counts = {name: getattr(args, name) for name in rs.SCHEDULE_ENV if getattr(args, name) is not None}
    on_demand_only = (args.on_demand or args.flight_recorder) and args.steps is None and not counts
    if args.flight_max_entries < 1:
        raise CommandError(f"--flight-max-entries: expected a whole number >= 1, got {args.flight_max_entries}")
    return rs.RunSettings(
        schedule=None if on_demand_only else rs.schedule_from(args.steps, counts),
        modes=rs.parse_mode_names(args.modes),
        out=args.out.resolve(),
        with_stack=args.with_stack,
        record_shapes=args.record_shapes,
        memory=args.memory,
        on_demand=args.on_demand,
        step_fn=rs.parse_step_fn(args.step_fn),
        flight_recorder=args.flight_recorder,
        dump_signal=rs.parse_dump_signal(args.dump_signal).name,
        flight_max_entries=args.flight_max_entries,
    )


def injected_env(settings: rs.RunSettings, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the injection directory first on PYTHONPATH and the settings' variables."""
    env = {k: v for k, v in base.items() if not k.startswith("KINETOSCOPE_") or k in _KEPT_VARIABLES}
    path = [str(INJECT_DIR), *([base["PYTHONPATH"]] if base.get("PYTHONPATH") else [])]
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(settings.to_env())
    return env


# Variables of other parts of kinetoscope that a run passes through unchanged.
_KEPT_VARIABLES = frozenset({"KINETOSCOPE_INSTANCE_ID", "KINETOSCOPE_ARTIFACT_CACHE_DIR"})


def run_child(command: list[str], env: dict[str, str], forwarded: tuple[signal.Signals, ...] = ()) -> int:
    """Run the program, passing SIGTERM (and ``forwarded``) on and leaving Ctrl-C to it; its exit
    status (128+N for signal N)."""
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        raise CommandError(f"cannot run {command[0]!r}: {exc.strerror or exc}", exit_code=127) from exc
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    passed = {signum: signal.signal(signum, lambda n, _frame: child.send_signal(n))
              for signum in (signal.SIGTERM, *forwarded)}
    try:
        code = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous_int)
        for signum, previous in passed.items():
            signal.signal(signum, previous)
    return 128 - code if code < 0 else code


def sessions_since(out: Path, started_ns: int) -> list[Path]:
    """Session directories under ``out`` whose capture started at or after ``started_ns`` (their
    names are start times that sort as text)."""
    if not out.is_dir():
        return []
    earliest = layout.timestamp_dir_name(started_ns, 0)
    return [path for path in layout.find_sessions(out) if layout.parse_session_path(path) and path.name >= earliest]


def report_sessions(settings: rs.RunSettings, started_ns: int, out: TextIO) -> None:
    sessions = sessions_since(settings.out, started_ns)
    if not sessions:
        out.write(f"kinetoscope run: no session was written under {settings.out}. {_why_none(settings)}\n")
        return
    out.write(f"kinetoscope run: {len(sessions)} session(s) under {settings.out}:\n")
    for path in sessions:
        out.write(f"  {_rank_label(path)}  {path}\n")
    out.write("Next:\n")
    for verb in ("verify", "summary", "view"):
        out.write(f"  kinetoscope {verb} {shlex.quote(str(settings.out))}\n")


def _why_none(settings: rs.RunSettings) -> str:
    if settings.schedule is None and settings.flight_recorder:
        return (f"The flight recorder dumped nothing: no out-of-memory error reached the top "
                f"and no {settings.dump_signal} came.")
    if settings.schedule is None:
        return "Nothing was triggered (kinetoscope trigger)."
    counted = f"returns of {settings.step_fn}" if settings.step_fn else "optimizer.step() calls"
    return (
        f"The program did not reach step {settings.schedule.first_recorded_step}; steps are counted by {counted}. "
        "Choose earlier steps with --steps, or name the step function with --step-fn MODULE:FUNCTION."
    )


def _rank_label(path: Path) -> str:
    from kinetoscope.format.session_files import trace_info as ti

    try:
        ident = ti.read_trace_info(path).identity
    except Exception:  # noqa: BLE001 - a session whose metadata cannot be read is still listed
        return "rank ?"
    return f"rank {ident.rank}" if ident.rank_known else "rank -"


command = RunCommand()
