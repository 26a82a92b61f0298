"""Capture the next N steps of running processes: kinetoscope trigger [PID | --all] --steps N.

Asks processes of this user on this host that listen for it (started under
`kinetoscope run --on-demand`, or that called `kinetoscope.on_demand()`) to record their
next N steps, after one warm-up step, from their next step boundary; every rank of a
torchrun job with --all. Waits until each has written its session and says where it went.
Talks over per-user Unix sockets only (see docs/capture.md); no network port is involved.

Exit status: 0 every process captured, 1 some did not, 2 none listening.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from kinetoscope._errors import CommandError
from kinetoscope.capture.running import on_demand
from kinetoscope.capture.running.run_settings import MODE_NAMES, parse_mode_names

CONNECT_TIMEOUT_S = 10.0


class TriggerCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("pid", type=int, nargs="?", help="the process to trigger")
        parser.add_argument("--all", action="store_true", help="every listening process of this user on this host")
        parser.add_argument("--steps", type=int, required=True, help="steps to record")
        parser.add_argument("--modes", help=f"comma-separated, of {','.join(MODE_NAMES)} (default: the process's)")
        parser.add_argument("--with-stack", action="store_true", default=None, help="record Python stacks")
        parser.add_argument("--record-shapes", action="store_true", default=None, help="record input shapes")
        parser.add_argument("--out", type=Path, help="profile_output_dir (default: the process's)")
        parser.add_argument("--timeout", type=float, default=300.0, dest="timeout_s", metavar="SECONDS",
                            help="how long to wait for the sessions (default %(default)s)")

    def run(self, args: argparse.Namespace) -> int:
        request = _request(args)
        targets = _targets(args)
        sent = {pid: _send(path, request) for pid, path in targets.items()}
        connections = {pid: conn for pid, conn in sent.items() if conn is not None}
        if not connections:
            raise CommandError("no process is listening: every socket found was stale (removed)")
        deadline = time.monotonic() + args.timeout_s
        failures = sum(not _report(pid, conn, deadline) for pid, conn in connections.items())
        return 1 if failures else 0


def _request(args: argparse.Namespace) -> bytes:
    if args.steps < 1:
        raise CommandError("--steps: expected a positive number of steps")
    request: dict[str, Any] = {"steps": args.steps, "with_stack": args.with_stack, "record_shapes": args.record_shapes}
    if args.modes:
        request["modes"] = list(parse_mode_names(args.modes))
    if args.out is not None:
        request["out"] = str(args.out.resolve())
    return json.dumps(request).encode() + b"\n"


def _targets(args: argparse.Namespace) -> dict[int, Path]:
    if (args.pid is None) == (not args.all):
        raise CommandError("give one PID or --all")
    listening = on_demand.listening_pids()
    if args.pid is not None:
        if args.pid not in listening:
            raise CommandError(f"pid {args.pid} is not listening (start it under kinetoscope run --on-demand)")
        return {args.pid: listening[args.pid]}
    if not listening:
        raise CommandError(f"no process of this user is listening under {on_demand.runtime_dir(create=False)}")
    return listening


def _send(path: Path, request: bytes) -> socket.socket | str | None:
    """The connection with the request sent; an error message; None for a stale socket (removed)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        conn.connect(str(path))
        conn.sendall(request)
    except ConnectionRefusedError:  # nothing listens: its process ended and the pid was reused
        conn.close()
        path.unlink(missing_ok=True)
        return None
    except OSError as exc:
        conn.close()
        return f"cannot reach {path}: {exc.strerror or exc}"
    return conn


def _report(pid: int, conn: socket.socket | str, deadline: float) -> bool:
    """Print what one process answered; True when it captured."""
    if isinstance(conn, str):
        print(f"pid {pid}: {conn}", file=sys.stderr)
        return False
    with conn, conn.makefile("rb") as replies:
        for line in _lines(conn, replies, deadline):
            reply = json.loads(line)
            label = f"pid {pid}" + (f" (rank {reply['rank']})" if reply.get("rank") else "")
            if reply["state"] == "accepted":
                print(f"{label}: capturing from its next step (now at step {reply['step']})", flush=True)
                continue
            for session in reply.get("sessions", []):
                print(f"{label}: session {session}", flush=True)
            if reply["state"] == "error":
                print(f"{label}: {reply['message']}", file=sys.stderr)
            return bool(reply["state"] == "done" and reply.get("sessions"))
    print(f"pid {pid}: no answer before the timeout (or it ended without saying)", file=sys.stderr)
    return False


def _lines(conn: socket.socket, replies: Any, deadline: float) -> Any:
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        conn.settimeout(remaining)
        try:
            line = replies.readline()
        except (OSError, TimeoutError):
            return
        if not line:
            return
        yield line


command = TriggerCommand()
