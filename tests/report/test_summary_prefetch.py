"""``summary`` reads a local dataset's tables while it imports the analyses (``report/prefetch``):
the columns it reads early are those the analyses and rules need, it reads them once, and a
summary that cannot use them (``--only``, a failed read) reads the dataset as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinetoscope.analysis import ANALYSES, needed_columns
from kinetoscope.cli import main
from kinetoscope.query import Dataset
from kinetoscope.report import prefetch as summary_prefetch

from ..ingest.helpers import import_scenario


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prefetch")
    assert main(["ingest", str(import_scenario("import-cpu-gloo", root / "prof")), "--out", str(root / "ds")]) == 0
    return root / "ds"


def test_the_columns_read_early_are_those_every_analysis_and_rule_reads() -> None:
    from kinetoscope.findings import NEEDED_COLUMNS

    assert needed_columns(ANALYSES) == summary_prefetch.COLUMNS
    for table, columns in NEEDED_COLUMNS.items():
        early = summary_prefetch.COLUMNS[table]
        assert early is None or set(columns) <= set(early), table


def _document(dataset: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> Any:
    capsys.readouterr()
    assert main(["summary", str(dataset), "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def _counting_loads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    load = Dataset.load

    def counted(
        self: Dataset, columns: Any, run: str | None = None, rank: int | None = None, narrowed: Any = None
    ) -> Any:
        calls.append(dict(columns) if rank is None else {"rank": (run, rank), **columns})
        return load(self, columns, run, rank, narrowed)

    monkeypatch.setattr(Dataset, "load", counted)
    return calls


def test_a_full_summary_reads_the_dataset_once_early(
    dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting_loads(monkeypatch)
    document = _document(dataset, capsys)
    assert calls == [summary_prefetch.COLUMNS]
    assert document["analyses"]["overview"]["rows"] and "findings" in document


def test_the_one_screen_takes_its_fewer_columns_of_the_early_read(
    dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting_loads(monkeypatch)
    capsys.readouterr()
    assert main(["summary", str(dataset)]) == 0
    assert capsys.readouterr().out.startswith("Ran: 1 rank")
    assert calls == [summary_prefetch.COLUMNS]  # read once, early; not again for the screen's columns


def test_only_some_analyses_read_only_their_columns(
    dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting_loads(monkeypatch)
    _document(dataset, capsys, "--only", "top_ops")
    assert calls == [needed_columns(tuple(a for a in ANALYSES if a.name == "top_ops"))]


def test_a_failed_early_read_is_read_again_with_the_same_document(
    dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _document(dataset, capsys)

    def failing(path: Path, run: str | None, rank: tuple[str, int] | None) -> list[Any]:
        raise OSError("the disk went away")

    monkeypatch.setattr(summary_prefetch, "load_share", failing)
    calls = _counting_loads(monkeypatch)
    assert _document(dataset, capsys) == expected
    assert calls == [summary_prefetch.COLUMNS]  # the caller's own read, after the failed one


def test_a_summary_rank_by_rank_reads_its_first_rank_early(
    dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _document(dataset, capsys, "--no-by-rank")
    calls = _counting_loads(monkeypatch)
    assert _document(dataset, capsys, "--by-rank", "--workers", "1") == expected
    (first,) = Dataset(dataset).manifest.ranks()
    assert calls == [{"rank": first, **summary_prefetch.COLUMNS}]  # the one rank, read early and taken


def test_the_analyses_read_the_events_run_dictionary_encoded(dataset: Path) -> None:
    # GIVEN a dataset; WHEN the summary reads its tables early
    (tables,) = summary_prefetch.load_share(dataset, None, None)
    # THEN the events' run comes as the analyses keep it, a dictionary (not text encoded after:
    # 3 MiB more at the read's peak on 151 k events), and the counters' as text, as declared
    assert pa.types.is_dictionary(tables["events"].schema.field("run").type)
    assert tables["counters"].schema.field("run").type == pa.string()


def test_the_args_no_analysis_reads_change_no_section_nor_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a dataset with allocator instants, whose args text the summary's read leaves out
    from ..query.test_part_files import _with_allocations

    dataset = _with_allocations(tmp_path).path
    assert "args" in summary_prefetch.NARROWED["events"]

    def document() -> str:
        capsys.readouterr()
        assert main(["summary", str(dataset), "--json"]) == 0
        return capsys.readouterr().out

    narrowed = document()
    # WHEN the same summary reads every row's args THEN every section and finding is the same
    whole = tuple(name for name in summary_prefetch.NARROWED["events"] if name != "args")
    monkeypatch.setitem(summary_prefetch.NARROWED, "events", whole)
    assert document() == narrowed
    assert json.loads(narrowed)  # a document, with the allocations' counters in it
