"""The rows the cross-rank collective analyses read, read alone: each rank's collective kernels and
host collectives with their args, and the sessions' hosts. ``matched_collectives`` and
``clock_offsets`` give the same result on these as on the whole events table, from a few thousand
rows instead of every event (the viewer's ``/api/meta`` and ``export --align-clocks`` read them);
``collective_waits`` needs every event for the ranks' wall time."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.model import collectives, kinds
from kinetoscope.query.dataset import Dataset

_COLUMNS = "run, rank, id, layer, kind, name, category, collective, ts_ns, dur_ns, step, args"


def collective_tables(
    dataset: Dataset, run: str | None = None, user_patterns: tuple[str, ...] = ()
) -> dict[str, pa.Table]:
    """``events`` (only collective kernels and host collectives: those the built-in rules decided,
    and the kernels the user's ``communication`` patterns match, ``model.collectives.of_user_kernel``)
    and ``sessions`` (run, rank, host)."""
    params = {
        "run": run,
        "kernel": kinds.KERNEL,
        "collective": kinds.COLLECTIVE,
        "named": _user_kernels(dataset, run, user_patterns),
    }
    events = dataset.sql(
        f"""SELECT {_COLUMNS} FROM events
            WHERE ($run IS NULL OR run = $run)
              AND ((kind = $kernel AND (coalesce(collective, '') <> '' OR list_contains($named, name)))
                   OR kind = $collective)
            ORDER BY run, rank, ts_ns, id""",
        params,
    )
    sessions = dataset.sql(
        "SELECT run, rank, host FROM sessions WHERE ($run IS NULL OR run = $run) ORDER BY run, rank", {"run": run}
    )
    return {"events": events, "sessions": sessions}


def _user_kernels(dataset: Dataset, run: str | None, user_patterns: tuple[str, ...]) -> list[str]:
    """The names of kernels without a built-in collective that the user's patterns make one (none
    without patterns: no query)."""
    if not user_patterns:
        return []
    names = (
        dataset.sql(
            """SELECT DISTINCT name FROM events
            WHERE ($run IS NULL OR run = $run) AND kind = $kernel AND coalesce(collective, '') = ''
              AND name IS NOT NULL""",
            {"run": run, "kernel": kinds.KERNEL},
        )
        .column("name")
        .to_pylist()
    )
    return [name for name, found in zip(names, collectives.of_user_kernels(names, user_patterns), strict=True) if found]
