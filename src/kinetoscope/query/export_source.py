"""The rows a merged trace export needs, streamed from the dataset in batches (DuckDB).

Every rank becomes one host process and one process per device in the output; ``out_pid``
and ``out_tid`` number them so that ranks never collide, whatever their real pids. All
times stay CLOCK_REALTIME ns; ``shifts_ns`` takes a rank's estimated clock offset off all its
times (``export --align-clocks``), for ranks whose host clock is not the reference's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from kinetoscope.query.dataset import Dataset

BATCH_ROWS = 65_536
# out_pid = rank index * PID_STRIDE (host) or + 1 + device (device processes).
PID_STRIDE = 1000

_RANKS = (
    "SELECT run, rank, dense_rank() OVER (ORDER BY run, rank) AS rank_index "
    "FROM (SELECT DISTINCT run, rank FROM {source})"
)
_WHERE_RUN = "WHERE ($run IS NULL OR run = $run)"
# Every flow edge numbered once; ordered, so the number is the same wherever the CTE is read.
_NUMBERED_FLOWS = f"""numbered AS (SELECT src_id, dst_id, kind, row_number() OVER (ORDER BY src_id, dst_id, kind) AS fid
                         FROM flows {_WHERE_RUN})"""


def _out_pid(alias: str, on_device: str) -> str:
    """The output process of a row of ``alias``: its rank's host process, or one of its devices."""
    return (
        f"CASE WHEN {on_device} THEN r.rank_index * {PID_STRIDE} + 1 + {alias}.device "
        f"ELSE r.rank_index * {PID_STRIDE} END"
    )


def _shifts_sql(shifts_ns: Mapping[tuple[str, int], int]) -> str:
    """``shifts (run, rank, shift_ns)``: the ns to take off each shifted rank's times."""
    if not shifts_ns:
        return "SELECT NULL::VARCHAR AS run, NULL::INTEGER AS rank, NULL::BIGINT AS shift_ns WHERE false"
    values = ", ".join(
        f"('{run.replace(chr(39), chr(39) * 2)}', {int(rank)}, {int(ns)})" for (run, rank), ns in shifts_ns.items()
    )
    return f"SELECT * FROM (VALUES {values}) AS s(run, rank, shift_ns)"


@dataclass(frozen=True)
class ExportRows:
    """Batches of the rows to export and the tracks they use."""

    dataset: Dataset
    run: str | None
    shifts_ns: Mapping[tuple[str, int], int] = field(default_factory=dict)  # (run, rank) -> ns taken off its times

    def _params(self) -> dict[str, str | None]:
        return {"run": self.run}

    def _shifted(self, alias: str) -> str:
        """The rows of ``alias`` (events or counters) with their rank's shift taken off ``ts_ns``."""
        if not self.shifts_ns:
            return f"SELECT * FROM {alias}"
        return (
            f"SELECT {alias}.* REPLACE ({alias}.ts_ns - coalesce(sh.shift_ns, 0) AS ts_ns) FROM {alias} "
            f"LEFT JOIN ({_shifts_sql(self.shifts_ns)}) sh ON sh.run = {alias}.run AND sh.rank = {alias}.rank"
        )

    def _batches(self, query: str) -> Iterator[pa.RecordBatch]:
        yield from self.dataset.stream(query, self._params(), BATCH_ROWS)

    def first_ts_ns(self) -> int:
        query = f"SELECT min(ts_ns) AS t FROM ({self._shifted('events')}) {_WHERE_RUN}"
        table = self.dataset.sql(query, self._params())
        value = table.column("t")[0].as_py()
        return int(value) if value is not None else 0

    def _with_tracks(self) -> str:
        """``ev``: events with their output process and thread, one thread per track of the dataset
        (``tracks``: the model's tracks, named and ordered as the system and device traces are)."""
        ranks = _RANKS.format(source="events")
        on_device = "t.layer = 'device'"
        return f"""
            WITH ranks AS ({ranks}),
            out_tracks AS (
              SELECT t.track_id, t.run, t.rank, t.name, t.pid,
                CASE WHEN {on_device} THEN t.device ELSE -1 END AS device,
                {_out_pid("t", on_device)} AS out_pid,
                row_number() OVER (PARTITION BY t.run, t.rank ORDER BY t.session, t.sort) AS out_tid
              FROM tracks t JOIN ranks r USING (run, rank)
              WHERE ($run IS NULL OR t.run = $run)
            ),
            ev AS (
              SELECT e.*, o.out_pid, o.out_tid
              FROM ({self._shifted("events")}) e JOIN out_tracks o USING (track_id)
              WHERE ($run IS NULL OR e.run = $run)
            )"""

    def tracks(self) -> pa.Table:
        """One row per output thread/stream: out_pid, out_tid, run, rank, device (-1 for host), pid, name."""
        query = f"""{self._with_tracks()}
            SELECT out_pid, out_tid, run, rank, device, pid, name
            FROM out_tracks WHERE track_id IN (SELECT DISTINCT track_id FROM ev) ORDER BY out_pid, out_tid"""
        return self.dataset.sql(query, self._params())

    def slices(self, ordered: bool) -> Iterator[pa.RecordBatch]:
        """Events with their output track and the flow ids leaving (``flows_out``) and entering them."""
        order = "ORDER BY ts_ns, dur_ns DESC, id" if ordered else ""
        query = f"""{self._with_tracks()},
            {_NUMBERED_FLOWS},
            outgoing AS (SELECT src_id AS id, list(fid) AS flows_out FROM numbered GROUP BY src_id),
            incoming AS (SELECT dst_id AS id, list(fid) AS flows_in FROM numbered GROUP BY dst_id)
            SELECT ev.id, ev.out_pid, ev.out_tid, ev.name, ev.category, ev.layer, ev.ts_ns, ev.dur_ns, ev.args,
                   coalesce(outgoing.flows_out, []) AS flows_out, coalesce(incoming.flows_in, []) AS flows_in
            FROM ev LEFT JOIN outgoing USING (id) LEFT JOIN incoming USING (id) {order}"""
        yield from self._batches(query)

    def counters(self) -> Iterator[pa.RecordBatch]:
        query = f"""WITH ranks AS ({_RANKS.format(source="events")})
            SELECT c.name, c.unit, c.ts_ns, c.value, {_out_pid("c", "c.device >= 0")} AS out_pid
            FROM ({self._shifted("counters")}) c JOIN ranks r USING (run, rank)
            WHERE ($run IS NULL OR c.run = $run) ORDER BY out_pid, c.name, c.ts_ns"""
        yield from self._batches(query)

    def flow_kinds(self) -> Iterator[pa.RecordBatch]:
        """Flow edges with the start of their two ends (for formats that draw flows as events)."""
        query = f"""{self._with_tracks()},
            {_NUMBERED_FLOWS}
            SELECT n.fid, n.kind, s.out_pid AS src_pid, s.out_tid AS src_tid, s.ts_ns AS src_ts_ns,
                   d.out_pid AS dst_pid, d.out_tid AS dst_tid, d.ts_ns AS dst_ts_ns
            FROM numbered n JOIN ev s ON s.id = n.src_id JOIN ev d ON d.id = n.dst_id"""
        yield from self._batches(query)
