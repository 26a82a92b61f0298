"""A report made rank by rank: each rank's tables are read, analysed (on ``threads`` threads; one
from ``settings.SERIAL_EVENTS`` events of a rank, unless asked) and let go before the next rank is
read, so the process holds one rank's rows at a time however many ranks the dataset has. What a
rank leaves for the whole summary is small: its rows of the rank analyses, the events the analyses
and rules across ranks read of it (``analysis.per_rank.run_rows``), its findings, and its first
event time (the deep links' origin). The result is the summary made over every rank at once, row
for row (``tests/report/test_summary_by_rank.py``)."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis import prepared
from kinetoscope.analysis.ops.shapes import remembered
from kinetoscope.analysis.per_rank import RankPart, combined, joined, rank_part, run_tables
from kinetoscope.analysis.tables import of_rank, reusing
from kinetoscope.dataset.schema import TABLES
from kinetoscope.findings import NEEDED_COLUMNS, Finding, combined_findings, rank_findings
from kinetoscope.findings.engine import RankFindings
from kinetoscope.query import Dataset
from kinetoscope.query.object_store import StoredDataset
from kinetoscope.query.rank_loaders import load_rank
from kinetoscope.report.prefetch import NARROWED, taken
from kinetoscope.report.settings import (
    analysis_options,
    analysis_threads,
    first_ts_ns,
    freeing_after_each,
    given_to_analyses,
    windowed,
)

if TYPE_CHECKING:
    from kinetoscope.report.prefetch import Early
    from kinetoscope.report.settings import Settings

RankKey = tuple[str, int]


@dataclass(frozen=True)
class RankShare:
    """What one rank leaves for the summary once its tables are let go."""

    key: RankKey
    part: RankPart
    findings: RankFindings | None  # None: findings not asked
    rule_tables: dict[str, pa.Table] | None  # what the rules across ranks read of it
    first_ts_ns: int | None  # None: no events


def summarised(
    dataset: Dataset,
    columns: dict[str, Any],
    names: Sequence[str],
    options: Settings,
    early: Early | None,
    *,
    executor: cf.Executor | None = None,
    t0_ns: int | None = None,
) -> tuple[dict[str, pa.Table], list[Finding] | None]:
    """The analyses of ``names`` by name, and the findings (None: ``--only`` picked analyses), of
    every rank of ``dataset`` (of ``options.run``; it has some), one rank after another, each on
    ``options.threads`` threads; ``early``: the first rank's tables, read while the analyses were
    imported. With an
    ``executor`` (a Dask cluster's), each rank's share is a task on its workers, which read the
    rank where the dataset lies; only the shares come back. ``t0_ns``: the findings' time origin
    (None: the dataset's first event)."""
    keys = dataset.ranks(options.run)
    whole = {name: dataset.table(name, cols, options.run) for name, cols in columns.items() if name in _UNPARTITIONED}
    local = executor is None
    plan = RankPlan(dataset if local else None, where_of(dataset), columns, tuple(names), options, early, whole)
    shares = _shares(plan, keys, executor)
    # The across-ranks tables in the dataset's own order (its parts sorted by path: rank=10 before
    # rank=2), as every rank read at once holds them, so that instances are numbered alike.
    in_path_order = sorted(shares, key=lambda s: (s.key[0], str(s.key[1])))
    given = analysis_options(options)
    results = combined([s.part for s in shares], names, given, run_parts=[s.part for s in in_path_order])
    if options.only:
        return results, None
    firsts = [s.first_ts_ns for s in shares if s.first_ts_ns is not None]
    if t0_ns is None:
        t0_ns = first_ts_ns(dataset) if options.run is not None else min(firsts, default=0)
    per_rank_found = {s.key: s.findings or {} for s in shares}
    rule_tables = joined([s.rule_tables for s in in_path_order if s.rule_tables is not None])
    return results, combined_findings(per_rank_found, rule_tables, t0_ns=t0_ns)


_UNPARTITIONED = frozenset(table.name for table in TABLES if not table.partitioned)


def _shares(plan: RankPlan, keys: list[RankKey], executor: cf.Executor | None) -> list[RankShare]:
    """Each rank's share, in ``keys``' order: on ``executor``'s workers, or one after another here."""
    if executor is not None:
        futures = [executor.submit(plan.share, key) for key in keys]
        done, _ = cf.wait(futures, return_when=cf.FIRST_EXCEPTION)  # a rank's error, whichever rank, at once
        failed = next((f for f in futures if f in done and f.exception() is not None), None)
        if failed is not None:
            failed.result()
        return [future.result() for future in futures]
    with remembered():  # ranks that run one program share their args texts: their shapes are read once
        return [plan.share(key) for key in keys]


def where_of(dataset: Dataset) -> str:
    """Where ``dataset`` lies: its directory, or its URL on an object store."""
    return dataset.url if isinstance(dataset, StoredDataset) else str(dataset.path)


@dataclass(frozen=True)
class RankPlan:
    """What every rank's share is made of: the dataset (None on a cluster's worker, which opens it
    ``where`` it lies), the columns to read, the analyses and options, and the tables not
    partitioned by rank (sessions, warnings: small), read once for all ranks."""

    dataset: Dataset | None
    where: str
    columns: dict[str, Any]
    names: tuple[str, ...]
    options: Settings
    early: Early | None  # the first rank's tables, read early
    whole: dict[str, pa.Table]

    def share(self, key: RankKey) -> RankShare:
        """One rank read (or taken from ``early``), analysed (in a cache of its own, let go with the
        rank) and reduced to its share."""
        with reusing(own=True), given_to_analyses(self.options):  # the user's options travel with the task
            read = taken(self.early, self.columns, key)
            read = read if read is not None else self._load(key)
            options = dataclasses.replace(self.options, threads=analysis_threads(read, self.options, rank_by_rank=True))
            tables = prepared(read, options.threads)
            del read
            return self._reduced(key, tables, options)

    def _reduced(self, key: RankKey, tables: dict[str, pa.Table], options: Settings) -> RankShare:
        """The rank's share of its (prepared) tables: the analyses over the window the options cut,
        the findings (on the same threads) over the whole of them."""
        whole, ready = windowed(tables, options)
        windowless = whole if options.steady_state else None
        rules = [] if options.only else [functools.partial(rank_findings, {n: tables[n] for n in NEEDED_COLUMNS})]
        given = analysis_options(options)
        freeing = freeing_after_each(tables, options)
        part, found = rank_part(
            ready, self.names, given, windowless=windowless, threads=options.threads, also=rules, after_each=freeing
        )
        if options.only:
            return RankShare(key, part, None, None, None)
        rules_read = part.run_tables if ready["events"] is tables["events"] else run_tables(tables)
        ts_ns = tables["events"].column("ts_ns")
        first = pc.min(ts_ns).as_py() if len(ts_ns) else None
        return RankShare(key, part, cast(RankFindings, found[0]), rules_read, None if first is None else int(first))

    def _load(self, key: RankKey) -> dict[str, pa.Table]:
        """The rank's rows: its partitions read, the tables read once cut to its rows."""
        partitioned = {name: cols for name, cols in self.columns.items() if name not in self.whole}
        if self.dataset is not None:
            found = self.dataset.load(partitioned, run=key[0], rank=key[1], narrowed=NARROWED)
        else:
            found = load_rank(self.where, partitioned, run=key[0], rank=key[1], narrowed=NARROWED)
        mine = {name: of_rank(table, *key) for name, table in self.whole.items()}
        return {name: found[name] if name in found else mine[name] for name in self.columns}

