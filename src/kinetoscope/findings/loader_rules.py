"""Steps waiting for their data: the DataLoader's ``__next__`` taking a large share of the step.

torch's DataLoader records each batch it hands out as ``enumerate(DataLoader)#<iterator>.__next__``:
``_SingleProcessDataLoaderIter`` (``num_workers=0``: the batch is loaded in the step's own thread)
or ``_MultiProcessingDataLoaderIter`` (the step waits for a worker's batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kinetoscope.analysis.tables import sweep
from kinetoscope.findings.engine import Observation, rule, severity_by_share
from kinetoscope.findings.ranks import RankData, top_names
from kinetoscope.model import kinds
from kinetoscope.model.data_loading import LOADER_NEXT, SINGLE_PROCESS

NS_PER_MS = 1_000_000


def _step_ns(data: RankData) -> int:
    steps = data.step_rows
    return int(data.ints("dur_ns")[steps].sum()) if len(steps) else data.wall_ns


@rule(
    "data_loader_bound",
    "Steps wait for the DataLoader",
    "medium",
    "Load batches beside the step: `DataLoader(num_workers=N)` (N up to the free CPU cores) with "
    "`persistent_workers=True` and `prefetch_factor`; if workers are already used, make `__getitem__` cheaper "
    "(decode or augment once, offline) or add workers.",
    min_loader_pct=10,
)
def data_loader_bound(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Time in ``enumerate(DataLoader)#...__next__`` inside the steps, as a share of the steps' time."""
    rows = np.flatnonzero(data.name_matches(LOADER_NEXT) & data.in_steps())
    rows = rows[data.kind_at(rows, *kinds.OP_KINDS)]
    if not len(rows):
        return []
    mask = np.zeros(data.events.num_rows, dtype=bool)
    mask[rows] = True
    loader_ns = data.covered_ns(mask)
    step_ns = _step_ns(data)
    share_pct = 100 * loader_ns / max(step_ns, 1)
    if share_pct < limits["min_loader_pct"]:
        return []
    names = data.names_at(rows)
    single = bool(np.any([SINGLE_PROCESS in str(n) for n in names]))
    seen: dict[str, Any] = {
        "batches": len(rows),
        "loader_ns": loader_ns,
        "step_ns": step_ns,
        "loader_pct_of_steps": round(share_pct, 2),
        "mean_batch_ns": int(loader_ns / len(rows)),
        "single_process": single,
        "iterators": top_names(names, data.ints("dur_ns")[rows]),
    }
    how = "loaded in the step's thread (num_workers=0)" if single else "waiting for DataLoader workers"
    summary = (
        f"{len(rows)} batch(es) took {loader_ns / NS_PER_MS:.2f} ms, {seen['loader_pct_of_steps']}% of the steps, "
        f"{how}"
    )
    basis = (
        "the time in the DataLoader's __next__: with workers loading ahead, the step only takes a ready batch "
        "(an upper bound: the workers need free CPU cores)"
    )
    gain_ns = loader_ns
    if data.device_work.any():
        gain_ns = _device_idle_ns(data, rows)
        seen["device_idle_during_loader_ns"] = gain_ns
        basis = (
            "the time in the DataLoader's __next__ while the device ran nothing: with workers loading ahead, "
            "the device is fed sooner (loading that ran under device work cost nothing)"
        )
    return [Observation(summary, seen, rows, gain_ns, basis, severity_by_share(gain_ns, data.wall_ns))]


def _device_idle_ns(data: RankData, rows: np.ndarray) -> int:
    """Time inside the loader rows ``rows`` during which no device work of the rank runs."""
    ts, work = data.ints("ts_ns"), data.device_work
    return sweep([(ts[work], data.ends(work)), (ts[rows], data.ends(rows))]).get(2, 0)
