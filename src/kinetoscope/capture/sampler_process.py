"""The helper process that runs the CPU_UTIL and HOST_MEMORY samplers for one training process.

Sampling in a separate process keeps it off the training job's GIL and out of its Python
stack trace (torch's stack tracer records every thread of the process it runs in). The
parent talks to it over a pipe, one JSON command per line:

- ``{"cmd": "start", "pid": P, "interval_ms": N, "files": [{"kind", "path", "header"}]}``
  opens the files, writes their header, clock and track packets, takes a first sample and
  answers ``started``;
- ``{"cmd": "stop"}`` takes a last sample, closes the files and answers ``stopped <ticks>``.

When the parent dies (the pipe closes) the child flushes what it has and exits, so a
killed job keeps its samples up to the last second.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from kinetoscope import _helper_process as helper
from kinetoscope._errors import SessionError
from kinetoscope.capture.samplers import (
    Channel,
    CpuReadings,
    CpuUtilSampler,
    HostMemorySampler,
    MemoryReadings,
    SampleLoop,
    Sampler,
)
from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets.packets import PacketWriter

_REPLY_TIMEOUT_S = 30.0


def _make_sampler(kind: str, pid: int) -> Sampler:
    if kind == CpuUtilSampler.name:
        return CpuUtilSampler(CpuReadings.for_pid(pid))
    if kind == HostMemorySampler.name:
        return HostMemorySampler(MemoryReadings.for_pid(pid))
    raise ValueError(f"unknown sampler {kind!r}")


def open_channel(kind: str, path: Path, header: pf.FileHeader, pid: int) -> Channel:
    sampler = _make_sampler(kind, pid)
    seq = pf.Sequence.for_file(header)
    writer = PacketWriter(path)
    writer.write(pf.header_packet(header, seq).SerializeToString())
    writer.write(pf.clock_snapshot_packet(seq, pf.read_clocks_ns()).SerializeToString())
    for packet in sampler.describe(seq):
        writer.write(packet.SerializeToString())
    return Channel(sampler, writer, seq)


class _Child:
    def __init__(self) -> None:
        self.loop: SampleLoop | None = None
        self.interval_ns = 0
        self.next_tick_ns = 0
        self.buffer = b""

    def handle(self, command: dict[str, Any]) -> str:
        if command["cmd"] == "start":
            return self._start(command)
        if command["cmd"] == "stop":
            return self._stop()
        return f"error unknown command {command['cmd']!r}"

    def _start(self, command: dict[str, Any]) -> str:
        self._stop()
        pid = int(command["pid"])
        channels = [
            open_channel(f["kind"], Path(f["path"]), pf.FileHeader(**f["header"]), pid) for f in command["files"]
        ]
        self.loop = SampleLoop(channels)
        self.interval_ns = int(command["interval_ms"]) * 1_000_000
        self.loop.tick()
        self.next_tick_ns = time.monotonic_ns() + self.interval_ns
        return "started"

    def _stop(self) -> str:
        loop, self.loop = self.loop, None
        if loop is None:
            return "stopped 0"
        loop.tick()
        loop.close()
        return f"stopped {loop.ticks}"

    def timeout_s(self) -> float | None:
        if self.loop is None:
            return None
        return max(0.0, (self.next_tick_ns - time.monotonic_ns()) / 1e9)

    def on_timeout(self) -> None:
        if self.loop is None:
            return
        self.loop.tick()
        now = time.monotonic_ns()
        self.next_tick_ns += self.interval_ns
        if self.next_tick_ns < now:  # fell behind (machine overloaded): skip, don't burst
            self.next_tick_ns = now + self.interval_ns

    def on_parent_gone(self) -> None:
        if self.loop is not None:
            self.loop.flush()
            for channel in self.loop.channels:
                channel.writer.close(sync=False)


def child_main(stdin_fd: int = 0, stdout: IO[str] = sys.stdout) -> int:
    child = _Child()
    stdout.write("ready\n")
    stdout.flush()
    while True:
        readable, _, _ = select.select([stdin_fd], [], [], child.timeout_s())
        if not readable:
            child.on_timeout()
            continue
        chunk = os.read(stdin_fd, 65536)
        if not chunk:
            child.on_parent_gone()
            return 0
        child.buffer += chunk
        while b"\n" in child.buffer:
            line, child.buffer = child.buffer.split(b"\n", 1)
            try:
                reply = child.handle(json.loads(line))
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which records it
                reply = f"error {type(exc).__name__}: {exc}".replace("\n", " ")
            stdout.write(reply + "\n")
            stdout.flush()


class SamplerProcess:
    """The parent's handle on its sampler helper process, spawned once and reused for every cycle."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            helper.module_command("kinetoscope.capture.sampler_process"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=helper.environment(),
            close_fds=True,
        )
        self._ready = False

    @property
    def pid(self) -> int:
        """Process id of the helper (to measure its own CPU use)."""
        return self._proc.pid

    def start(self, pid: int, interval_ms: int, files: list[dict[str, Any]]) -> None:
        self._await_ready()
        reply = self._call({"cmd": "start", "pid": pid, "interval_ms": interval_ms, "files": files})
        if reply != "started":
            raise SessionError(f"sampler process could not start: {reply}")

    def stop(self) -> int:
        reply = self._call({"cmd": "stop"})
        if not reply.startswith("stopped"):
            raise SessionError(f"sampler process could not stop cleanly: {reply}")
        return int(reply.split()[1])

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def _await_ready(self) -> None:
        if not self._ready:
            line = self._read_line()
            if line != "ready":
                raise SessionError(f"sampler process failed to start: {line or 'no answer'}")
            self._ready = True

    def _call(self, command: dict[str, Any]) -> str:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write((json.dumps(command) + "\n").encode())
            self._proc.stdin.flush()
        except OSError as exc:
            raise SessionError(f"sampler process is gone (exit code {self._proc.poll()}): {exc}") from exc
        return self._read_line()

    def _read_line(self) -> str:
        stdout = self._proc.stdout
        assert stdout is not None
        readable, _, _ = select.select([stdout], [], [], _REPLY_TIMEOUT_S)
        if not readable:
            return f"no answer within {_REPLY_TIMEOUT_S:.0f} s"
        return stdout.readline().decode(errors="replace").strip()


if __name__ == "__main__":
    raise SystemExit(child_main())
