"""The rows the cross-rank collective analyses read, read alone: each rank's collective kernels and
host collectives with their args, and the sessions' hosts. ``matched_collectives`` and
``clock_offsets`` give the same result on these as on the whole events table, from a few thousand
rows instead of every event (the viewer's ``/api/meta`` and ``export --align-clocks`` read them);
``collective_waits`` needs every event for the ranks' wall time."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.model import kinds
from kinetoscope.query.dataset import Dataset

_COLUMNS = "run, rank, id, layer, kind, name, category, collective, ts_ns, dur_ns, step, args"


def collective_tables(dataset: Dataset, run: str | None = None) -> dict[str, pa.Table]:
    """``events`` (only collective kernels and host collectives) and ``sessions`` (run, rank, host)."""
    params = {"run": run, "kernel": kinds.KERNEL, "collective": kinds.COLLECTIVE}
    events = dataset.sql(
        f"""SELECT {_COLUMNS} FROM events
            WHERE ($run IS NULL OR run = $run)
              AND ((kind = $kernel AND coalesce(collective, '') <> '') OR kind = $collective)
            ORDER BY run, rank, ts_ns, id""",
        params,
    )
    sessions = dataset.sql(
        "SELECT run, rank, host FROM sessions WHERE ($run IS NULL OR run = $run) ORDER BY run, rank", {"run": run}
    )
    return {"events": events, "sessions": sessions}
