"""Samplers driven directly with fake readings and a fake clock."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

from kinetoscope.capture.system.samplers import (
    Channel,
    CpuReadings,
    CpuUtilSampler,
    HostMemorySampler,
    MemoryReadings,
    SampleLoop,
)
from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets.packets import PacketWriter, iter_packets

CpuTimes = namedtuple("CpuTimes", "user system idle iowait")
ProcTimes = namedtuple("ProcTimes", "user system")
VMem = namedtuple("VMem", "total used available")
RSS = namedtuple("RSS", "rss")
SEQ = pf.Sequence(sequence_id=5, process_uuid=9)


class FakeCpu:
    def __init__(self) -> None:
        self.cpus = [CpuTimes(0, 0, 0, 0), CpuTimes(0, 0, 0, 0)]
        self.proc = ProcTimes(0.0, 0.0)

    def readings(self) -> CpuReadings:
        return CpuReadings(per_cpu=lambda: self.cpus, process=lambda: self.proc)


def values(packets: list[object]) -> dict[int, float]:
    return {p.track_event.track_uuid: p.track_event.double_counter_value for p in packets}  # type: ignore[attr-defined]


def test_cpu_util_from_deltas() -> None:
    # GIVEN two CPUs, one fully busy and one half busy over the interval, and a process using 1.5 cores
    fake = FakeCpu()
    sampler = CpuUtilSampler(fake.readings())
    assert sampler.sample(SEQ, 0) == []  # first tick only sets the baseline
    fake.cpus = [CpuTimes(1.0, 0.0, 0.0, 0.0), CpuTimes(0.25, 0.25, 0.4, 0.1)]
    fake.proc = ProcTimes(1.0, 0.5)
    # WHEN sampled one second later
    got = values(sampler.sample(SEQ, 1_000_000_000))
    # THEN utilisation is busy / total per CPU, and the process's use is in % of one core
    assert got[SEQ.track_uuid(CpuUtilSampler.cpu_track(0))] == 100.0
    assert got[SEQ.track_uuid(CpuUtilSampler.cpu_track(1))] == 50.0
    assert got[SEQ.track_uuid(CpuUtilSampler.PROCESS_TRACK)] == 150.0


def test_cpu_util_describes_one_track_per_cpu_plus_process() -> None:
    names = [p.track_descriptor.name for p in CpuUtilSampler(FakeCpu().readings()).describe(SEQ)]
    assert names == ["CPU 0 utilisation (%)", "CPU 1 utilisation (%)", "process CPU (% of one core)"]


def test_host_memory_reports_four_values() -> None:
    readings = MemoryReadings(system=lambda: VMem(100, 60, 40), process=lambda: RSS(7))
    got = values(HostMemorySampler(readings).sample(SEQ, 5))
    assert sorted(got.values()) == [7.0, 40.0, 60.0, 100.0]


def test_loop_flushes_at_least_once_a_second(tmp_path: Path) -> None:
    now = [0]
    writer = PacketWriter(tmp_path / "mem.pb")
    readings = MemoryReadings(system=lambda: VMem(100, 60, 40), process=lambda: RSS(7))
    loop = SampleLoop([Channel(HostMemorySampler(readings), writer, SEQ)], clock=lambda: now[0])
    now[0] = 2_000_000_000
    loop.tick()  # first tick flushes
    assert len(list(iter_packets(tmp_path / "mem.pb"))) == 4
    now[0] += 500_000_000
    loop.tick()  # half a second later: still buffered
    assert len(list(iter_packets(tmp_path / "mem.pb"))) == 4
    now[0] += 600_000_000
    loop.tick()  # past one second since the last flush
    assert len(list(iter_packets(tmp_path / "mem.pb"))) == 12
    loop.close()
