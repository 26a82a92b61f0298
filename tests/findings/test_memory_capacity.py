"""memory_near_capacity on a real CPU capture with host memory samples: the figures are the host's
own (checked against psutil), and a run with headroom stays silent."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
import torch
from torch.profiler import profile, schedule

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.findings import NEEDED_COLUMNS, RULES, run_rules
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..conftest import SHARED

pytestmark = pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")
STEPS = 3
HELD_BYTES = 256 << 20


def capture_holding_memory(tmp_path: Path) -> dict:
    """STEPS steps that each fill HELD_BYTES and hold them for 150 ms, sampled every 20 ms."""
    config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.HOST_MEMORY],
                           profile_output_dir=tmp_path / "prof", sample_interval_ms=20)  # fmt: skip
    exporter = Profiler(config)
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 schedule=schedule(wait=0, warmup=0, active=STEPS, repeat=1),
                 on_trace_ready=exporter.export_trace) as prof:  # fmt: skip
        for _ in range(STEPS):
            held = torch.ones(HELD_BYTES // 4)
            time.sleep(0.15)
            del held
            prof.step()
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        return ds.load(NEEDED_COLUMNS)


def test_the_host_figures_are_the_machines_own(tmp_path: Path) -> None:
    tables = capture_holding_memory(tmp_path)
    assert tables["sessions"].column("device_memory").to_pylist() == ["{}"]  # a CPU trace: no devices
    # WHEN the threshold is lifted, the host's peak is reported against the host's total
    (found,) = run_rules(tables, {"memory_near_capacity": {"min_used_pct": 0}}, [RULES["memory_near_capacity"]])
    seen = found.seen
    assert seen["device"] == "host" and seen["capacity_bytes"] == psutil.virtual_memory().total
    assert 0 < seen["peak_bytes"] <= seen["capacity_bytes"] and seen["free_at_peak_bytes"] >= 0
    assert seen["process_peak_bytes"] >= HELD_BYTES  # the tensor was filled, so resident
    assert found.gain_ns == 0


def test_a_run_with_headroom_is_silent(tmp_path: Path) -> None:
    if psutil.virtual_memory().percent >= 80:
        pytest.skip("this machine's memory is already 80% in use")
    tables = capture_holding_memory(tmp_path)
    assert run_rules(tables, rules=[RULES["memory_near_capacity"]]) == []


PUBLIC = SHARED / "datasets" / "public-traces"
DF_INDEX = PUBLIC / "hta/tests/data/df_index_resolver/df_index_resolver.json.gz"


@pytest.mark.skipif(not DF_INDEX.exists(), reason="public trace corpus not present")
def test_a_v100_rank_against_its_device_properties(tmp_path: Path) -> None:
    # A V100 rank recorded with profile_memory: 'Total Reserved' peaks at 12,782,141,440 bytes on device 1,
    # whose deviceProperties give totalGlobalMem 34,089,730,048 (both read from the JSON by hand): 37.5%
    from kinetoscope.cli import main

    assert main(["import", str(DF_INDEX), "--out", str(tmp_path / "prof")]) == 0
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        tables = ds.load(NEEDED_COLUMNS)
    assert run_rules(tables, rules=[RULES["memory_near_capacity"]]) == []
    (found,) = run_rules(tables, {"memory_near_capacity": {"min_used_pct": 30}}, [RULES["memory_near_capacity"]])
    assert found.seen == {**found.seen, "device": 1, "counter": "device 1 memory reserved", "used_pct": 37.5}
    assert (found.seen["peak_bytes"], found.seen["capacity_bytes"]) == (12_782_141_440, 34_089_730_048)
    assert [e.name for e in found.evidence] == ["[memory]"] and found.evidence[0].start_ns == found.seen["peak_ts_ns"]
