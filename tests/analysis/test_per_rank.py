"""The analyses computed rank by rank and combined equal each analysis over every rank: the per-rank ones
one rank per task, and every analysis and finding from the ranks' shares (``rank_part``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, TopOptions, needed_columns, prepared, run_all
from kinetoscope.analysis._tables.reuse import reusing
from kinetoscope.analysis.per_rank import RANK_LOCAL, by_rank, combined, joined, rank_part
from kinetoscope.findings import NEEDED_COLUMNS, combined_findings, rank_findings, run_rules
from kinetoscope.query.rank_loaders import rank_keys, rank_loaders
from kinetoscope.report.opening import open_dataset

from ..kineto_gen import TrainingSpec, write_dataset


def test_rank_by_rank_equals_all_ranks_at_once(tmp_path: Path) -> None:
    # GIVEN a 3-rank dataset (the last rank a straggler, so ranks differ)
    out = write_dataset(tmp_path / "ds", TrainingSpec(run="train", ranks=3, steps=2, layers=2, problems=True))
    assert rank_keys(out) == [("train", 0), ("train", 1), ("train", 2)]
    # WHEN every per-rank analysis runs one rank per task, and over all ranks at once
    with ThreadPoolExecutor(max_workers=2) as executor:
        combined = by_rank(executor, rank_loaders(out), top=5)
    with open_dataset(out) as dataset:
        tables = dataset.load(needed_columns(tuple(ANALYSES_BY_NAME[n] for n in RANK_LOCAL)))
    # THEN each result is the same, row for row
    assert set(combined) == set(RANK_LOCAL) and len(RANK_LOCAL) >= 15
    for name in RANK_LOCAL:
        alone = run_all(tables, (TopOptions(top=5),), analyses=(ANALYSES_BY_NAME[name],))[name]
        assert combined[name].to_pylist() == alone.to_pylist(), name
    assert set(combined["overview"].column("rank").to_pylist()) == {0, 1, 2}


def test_only_per_rank_analyses_are_computed_rank_by_rank(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=1) as executor, pytest.raises(ValueError, match="stragglers"):
        by_rank(executor, [], ["stragglers"])


def test_every_analysis_and_finding_from_the_ranks_shares(tmp_path: Path) -> None:
    # GIVEN a 3-rank dataset, each rank read on its own and reduced to its share
    out = write_dataset(tmp_path / "ds", TrainingSpec(run="train", ranks=3, steps=3, layers=2, problems=True))
    names = [a.name for a in ANALYSES]
    columns = needed_columns(ANALYSES)
    given = (TopOptions(top=3),)
    with open_dataset(out) as dataset:
        ranks = [dataset.load(columns, run=run, rank=rank) for run, rank in rank_keys(out)]
        everything = dataset.load(columns)
    parts, found, rule_tables = [], {}, []
    for key, tables in zip(rank_keys(out), ranks, strict=True):
        with reusing(own=True):
            part, _ = rank_part(tables, names, given)
            parts.append(part)
            found[key] = rank_findings({name: prepared(tables)[name] for name in NEEDED_COLUMNS})
            rule_tables.append(part.run_tables)
    # WHEN they are combined; THEN each analysis and the findings are those over every rank at once
    with reusing():
        alone = run_all(everything, given)
        t0_ns = int(pc.min(everything["events"].column("ts_ns")).as_py())
        expected = run_rules({name: everything[name] for name in NEEDED_COLUMNS}, t0_ns=t0_ns)
    combined_results = combined(parts, names, given)
    for name in names:
        assert combined_results[name].to_pylist() == alone[name].to_pylist(), name
    assert combined_findings(found, joined(rule_tables), t0_ns=t0_ns) == expected
    assert expected and any(row["rank"] == -1 for row in alone["kernel_type_breakdown"].to_pylist())
    # AND each rank's share of the events is a few of its rows: steps, collectives, first and last
    assert sum(part.run_tables["events"].num_rows for part in parts) < everything["events"].num_rows / 4


def test_no_ranks_combine_to_nothing() -> None:
    with pytest.raises(ValueError, match="no ranks"):
        combined([], ["overview"])


def test_ranks_whose_dictionary_columns_narrowed_differently_join() -> None:
    # GIVEN one rank's categories few (indexed in 8 bits when prepared), another's 128 (32 bits)
    few = pa.table({"category": pa.array(["a", "b"]).dictionary_encode()})
    many = pa.table({"category": pa.array([f"c{i}" for i in range(128)]).dictionary_encode()})
    parts = [prepared({"events": table}) for table in (few, many)]
    assert parts[0]["events"].schema != parts[1]["events"].schema
    # WHEN the ranks' tables are joined
    events = joined(parts)["events"]
    # THEN every row is there, in rank order, indexed in 32 bits
    assert events.column("category").to_pylist() == ["a", "b", *(f"c{i}" for i in range(128))]
    assert events.schema.field("category").type.index_type == pa.int32()
