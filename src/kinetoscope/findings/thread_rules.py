"""CPU-only ranks whose heavy ops run on one core while other cores sit idle: intra-op parallelism
(``torch.set_num_threads``) unused.

The trace shows ops on the thread that called them, never the intra-op (OpenMP) workers, so the
threads' use is read from the ``CPU_UTIL`` capture mode's samples: the process's CPU use (% of one
core) and each logical CPU's utilisation, over the steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis.tables import ints
from kinetoscope.findings.engine import Observation, rule, severity_by_share
from kinetoscope.findings.ranks import ALL_ROWS, RankData
from kinetoscope.model import kinds

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
PROCESS_CPU = "process CPU (% of one core)"
CPU_UTIL = r"^CPU \d+ utilisation \(%\)$"


def _span(data: RankData) -> tuple[int, int] | None:
    """(start, end) of the steps, else of the window."""
    steps = data.step_rows  # row positions (row 0 among them), not a mask
    if not (len(steps) or data.events.num_rows):
        return None
    chosen = steps if len(steps) else ALL_ROWS  # every row: read as they are, not gathered
    return int(data.ints("ts_ns")[chosen].min()), int(data.ends(chosen).max())


def _samples(data: RankData, span: tuple[int, int]) -> tuple[np.ndarray, int, float]:
    """(the process's CPU use in cores, per sample in the span; logical CPUs; their mean idle cores)."""
    counters = data.counters
    if counters is None or not counters.num_rows:
        return np.zeros(0), 0, 0.0
    names = counters.column("name").cast(pa.string())
    ts = ints(counters, "ts_ns")
    values = np.asarray(counters.column("value").to_numpy(zero_copy_only=False), np.float64)
    inside = (ts > span[0]) & (ts <= span[1])
    process = np.asarray(pc.fill_null(pc.equal(names, PROCESS_CPU), False).to_numpy(zero_copy_only=False), bool)
    per_cpu = np.asarray(pc.fill_null(pc.match_substring_regex(names, CPU_UTIL), False).to_numpy(), bool)
    cpus = len(np.unique(np.asarray(names.to_pylist(), dtype=object)[per_cpu])) if per_cpu.any() else 0
    cpu_ts, cpu_util = ts[per_cpu & inside], values[per_cpu & inside]
    if not len(cpu_ts):
        return values[process & inside] / 100, cpus, 0.0
    moments, at = np.unique(cpu_ts, return_inverse=True)
    idle_cores = np.bincount(at, weights=(100 - cpu_util) / 100, minlength=len(moments))
    return values[process & inside] / 100, cpus, float(idle_cores.mean())


@rule(
    "intra_op_parallelism_unused",
    "Heavy ops on one core while others sit idle (CPU)",
    "medium",
    "Let the ops use the idle cores: `torch.set_num_threads(N)` (or `OMP_NUM_THREADS=N`; launchers such as "
    "torchrun set it to 1 per process), N up to the cores this process may use; check "
    "`torch.__config__.parallel_info()`.",
    min_op_pct=50,
    min_op_us=100,
    max_cores_used=1.25,
    min_idle_cores=1,
)
def intra_op_parallelism_unused(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """On a rank with no device work: ops of at least ``min_op_us`` fill ``min_op_pct``% of the steps,
    the process uses at most ``max_cores_used`` cores on average, and ``min_idle_cores`` are idle."""
    if data.device_work.any():
        return []
    span = _span(data)
    if span is None:
        return []
    used, cpus, idle_cores = _samples(data, span)
    if not len(used) or cpus < 2:
        return []
    heavy = np.flatnonzero(
        data.kind(kinds.OP) & data.in_steps() & (data.ints("dur_ns") >= limits["min_op_us"] * NS_PER_US)
    )
    own = data.ints("self_ns")[heavy]
    op_ns, span_ns = int(own.sum()), span[1] - span[0]
    cores_used = float(used.mean())
    if op_ns < limits["min_op_pct"] / 100 * span_ns or cores_used > limits["max_cores_used"]:
        return []
    if idle_cores < limits["min_idle_cores"]:
        return []
    usable = max(min(float(cpus), cores_used + idle_cores), 1.0)
    gain_ns = int(op_ns * (1 - 1 / usable))
    seen: dict[str, Any] = {
        "logical_cpus": cpus,
        "process_cores_used": round(cores_used, 2),
        "idle_cores": round(idle_cores, 2),
        "samples": len(used),
        "heavy_op_self_ns": op_ns,
        "heavy_op_pct_of_steps": round(100 * op_ns / max(span_ns, 1), 2),
        "top_ops": data.top_names_at(heavy, own),
    }
    summary = (
        f"ops of {limits['min_op_us']:g} µs or more fill {seen['heavy_op_pct_of_steps']}% of the steps while the "
        f"process uses {seen['process_cores_used']} of {cpus} cores and {seen['idle_cores']} sit idle; "
        f"mostly {seen['top_ops'][0]['name']}"
    )
    basis = (
        f"the heavy ops' own time if spread over the {usable:.2f} cores in use or idle (Amdahl's bound: "
        "an upper bound, ops parallelise imperfectly)"
    )
    return [Observation(summary, seen, heavy, gain_ns, basis, severity_by_share(gain_ns, data.wall_ns))]
