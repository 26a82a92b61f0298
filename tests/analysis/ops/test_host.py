"""Host samples: the host's and the process's CPU and memory counters, picked by name."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME
from kinetoscope.dataset.schema import TABLES_BY_NAME


def test_host_samples_pick_counters_by_name_with_names_of_two_dictionaries_and_a_null() -> None:
    # GIVEN two CPUs' utilisation at two times, the process's CPU and memory, host memory and a
    # null name, in two chunks whose name dictionaries differ
    rows = [
        ("cpu0 utilisation (%)", 1, 10.0),
        ("cpu1 utilisation (%)", 1, 30.0),
        (None, 1, 1e9),
        ("process CPU (%)", 1, 40.0),
        ("host memory used", 1, 100.0),
        ("cpu0 utilisation (%)", 2, 50.0),
        ("process resident memory", 2, 8.0),
        ("process CPU (%)", 2, 60.0),
        ("host memory used", 2, 300.0),
    ]
    schema = TABLES_BY_NAME["counters"].full_schema()
    base = {"run": "r", "rank": 0, "session": "s", "unit": "", "device": -1}
    parts = [
        pa.Table.from_pylist([{**base, "name": n, "ts_ns": ts, "value": v} for n, ts, v in part], schema=schema)
        for part in (rows[:4], rows[4:])
    ]
    counters = pa.concat_tables(parts)
    assert counters.column("name").num_chunks == 2
    [found] = ANALYSES_BY_NAME["host_samples"]({"counters": counters}).to_pylist()
    assert found["samples"] == 2  # the CPUs' mean per time: 20 at 1, 50 at 2
    assert found["cpu_mean_pct"] == pytest.approx(35.0)
    assert found["cpu_peak_pct"] == pytest.approx(50.0)
    assert found["process_cpu_mean_pct"] == pytest.approx(50.0)
    assert found["process_cpu_peak_pct"] == pytest.approx(60.0)
    assert found["host_memory_mean_bytes"] == pytest.approx(200.0)
    assert found["host_memory_peak_bytes"] == pytest.approx(300.0)
    assert found["process_memory_peak_bytes"] == pytest.approx(8.0)
