"""Host samplers: CPU utilisation and memory.

Samplers are small and pure: ``sample(seq, now_ns)`` returns the packets for one tick;
the loop, the clock and the files sit at the edges (``SampleLoop``), so tests drive a
sampler with a fake clock and fake readings. The loop runs in a helper process
(``sampler_process``) so that sampling never competes with the training job for its GIL
and never shows up in the job's own Python stack trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psutil

from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets.packets import PacketWriter

FLUSH_INTERVAL_NS = 1_000_000_000


class Sampler(Protocol):
    """One kind of sample; its packets go to one file."""

    name: str

    def describe(self, seq: pf.Sequence) -> list[Any]:
        """Track descriptor packets, written once after the file header."""

    def sample(self, seq: pf.Sequence, now_ns: int) -> list[Any]:
        """Counter packets for one tick at ``now_ns`` (CLOCK_REALTIME ns)."""


@dataclass
class CpuReadings:
    """Where CPU times come from; replaced by fakes in tests."""

    per_cpu: Callable[[], Sequence[Any]]
    process: Callable[[], Any]

    @classmethod
    def for_pid(cls, pid: int) -> CpuReadings:
        return cls(per_cpu=lambda: psutil.cpu_times(percpu=True), process=psutil.Process(pid).cpu_times)


def _busy_and_total(times: Any) -> tuple[float, float]:
    total = float(sum(times))
    idle = float(times.idle) + float(getattr(times, "iowait", 0.0))
    return total - idle, total


class CpuUtilSampler:
    """Per-logical-CPU utilisation (%) and this process's CPU use (% of one core)."""

    name = "cpu_util"
    PROCESS_TRACK = "process CPU (% of one core)"

    def __init__(self, readings: CpuReadings) -> None:
        self._read = readings
        self._prev_cpus: list[tuple[float, float]] = []
        self._prev_process: tuple[int, float] | None = None
        self._cpu_count = len(self._read.per_cpu())

    @staticmethod
    def cpu_track(index: int) -> str:
        return f"CPU {index} utilisation (%)"

    def describe(self, seq: pf.Sequence) -> list[Any]:
        names = [self.cpu_track(i) for i in range(self._cpu_count)] + [self.PROCESS_TRACK]
        return [pf.counter_track_packet(seq, name, "%") for name in names]

    def sample(self, seq: pf.Sequence, now_ns: int) -> list[Any]:
        cpus = [_busy_and_total(t) for t in self._read.per_cpu()]
        proc_times = self._read.process()
        proc = (now_ns, float(proc_times.user) + float(proc_times.system))
        packets = []
        if self._prev_cpus:
            for index, (now, prev) in enumerate(zip(cpus, self._prev_cpus, strict=False)):
                dt = now[1] - prev[1]
                util = 100.0 * (now[0] - prev[0]) / dt if dt > 0 else 0.0
                uuid = seq.track_uuid(self.cpu_track(index))
                packets.append(pf.counter_value_packet(seq, uuid, now_ns, min(max(util, 0.0), 100.0)))
        if self._prev_process is not None and now_ns > self._prev_process[0]:
            wall_s = (now_ns - self._prev_process[0]) / 1e9
            util = 100.0 * (proc[1] - self._prev_process[1]) / wall_s
            packets.append(pf.counter_value_packet(seq, seq.track_uuid(self.PROCESS_TRACK), now_ns, max(util, 0.0)))
        self._prev_cpus, self._prev_process = cpus, proc
        return packets


@dataclass
class MemoryReadings:
    """Where memory figures come from; replaced by fakes in tests."""

    system: Callable[[], Any]
    process: Callable[[], Any]

    @classmethod
    def for_pid(cls, pid: int) -> MemoryReadings:
        return cls(system=psutil.virtual_memory, process=psutil.Process(pid).memory_info)


class HostMemorySampler:
    """System total / used / available memory and this process's resident memory, in bytes."""

    name = "host_mem"
    TRACKS = (
        "host memory total",
        "host memory used",
        "host memory available",
        "process resident memory",
    )

    def __init__(self, readings: MemoryReadings) -> None:
        self._read = readings

    def describe(self, seq: pf.Sequence) -> list[Any]:
        return [pf.counter_track_packet(seq, name, "bytes") for name in self.TRACKS]

    def sample(self, seq: pf.Sequence, now_ns: int) -> list[Any]:
        system = self._read.system()
        values = (system.total, system.used, system.available, self._read.process().rss)
        return [
            pf.counter_value_packet(seq, seq.track_uuid(name), now_ns, float(value))
            for name, value in zip(self.TRACKS, values, strict=False)
        ]


@dataclass
class Channel:
    """A sampler and the file it writes to."""

    sampler: Sampler
    writer: PacketWriter
    seq: pf.Sequence

    def emit(self, packets: list[Any]) -> None:
        for packet in packets:
            self.writer.write(packet.SerializeToString())


class SampleLoop:
    """Ticks every sampler and flushes their files at least once a second; the caller owns the timing."""

    def __init__(self, channels: list[Channel], clock: Callable[[], int] = time.time_ns) -> None:
        self.channels = channels
        self._clock = clock
        self._last_flush_ns = 0
        self.ticks = 0

    def tick(self) -> None:
        now_ns = self._clock()
        for channel in self.channels:
            channel.emit(channel.sampler.sample(channel.seq, now_ns))
        self.ticks += 1
        if now_ns - self._last_flush_ns >= FLUSH_INTERVAL_NS:
            self.flush(now_ns)

    def flush(self, now_ns: int | None = None) -> None:
        for channel in self.channels:
            channel.writer.flush()
        self._last_flush_ns = self._clock() if now_ns is None else now_ns

    def close(self) -> None:
        for channel in self.channels:
            channel.writer.close()
