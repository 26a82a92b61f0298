"""Import of a trace that expands past its bound: refused with a clear error, nothing left behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope._errors import FormatError
from kinetoscope.format.kineto import trace_source
from kinetoscope.format.problems import OUT_OF_RANGE
from kinetoscope.importer import trace_import as imp
from tests.format.kineto.test_trace_source import write_bomb


@pytest.mark.parametrize("write_pb", [True, False])
def test_a_gzip_bomb_is_refused_naming_the_setting(tmp_path: Path, write_pb: bool) -> None:
    # GIVEN a 70 KB trace.json.gz that expands to 72 MB
    bomb = write_bomb(tmp_path / "bomb.json.gz", 72 << 20)
    out = tmp_path / "out"
    # WHEN it is imported THEN the import is refused, naming the setting that raises the bound
    with pytest.raises(FormatError, match=trace_source.MAX_RATIO_ENV):
        imp.import_trace(bomb, imp.ImportOptions(out_dir=out, write_pb=write_pb))
    # AND no session nor staging folder is left
    assert list(out.iterdir()) == []


def _trace(path: Path, head: dict[str, Any] | None = None, ts: Any = None) -> Path:
    events = []
    for i in range(20):
        at = 1000 + 10 * i if ts is None else ts
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": at, "dur": 5})
        args = {"device": 0, "stream": 7, "correlation": i}
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": at, "dur": 2, "args": args})
    trace = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 1, "world_size": 2},
        "traceEvents": events,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        **(head or {}),
    }
    path.write_text(json.dumps(trace))
    return path


@pytest.mark.parametrize("write_pb", [True, False])
@pytest.mark.parametrize(
    ("head", "named"),
    [
        ({"distributedInfo": {"rank": 2**40, "world_size": 2}}, "distributedInfo.rank"),
        ({"distributedInfo": {"rank": 0, "world_size": -(2**63)}}, "distributedInfo.world_size"),
        ({"baseTimeNanoseconds": 2**64}, "baseTimeNanoseconds"),
    ],
)
def test_header_values_out_of_range_are_problems_not_tracebacks(
    tmp_path: Path, write_pb: bool, head: dict[str, Any], named: str
) -> None:
    # GIVEN a trace whose header holds a value beyond what its field can mean
    trace = _trace(tmp_path / "t.json", head)
    # WHEN it is imported THEN the value is read as unknown, with a problem naming it
    result = imp.import_trace(trace, imp.ImportOptions(out_dir=tmp_path / "out", write_pb=write_pb))
    assert result.session is not None and result.identity is not None
    assert result.problems.counts().get(OUT_OF_RANGE) == 1
    assert named in str(result.problems.records[0])
    if "rank" in named:
        assert not result.identity.rank_known


@pytest.mark.parametrize("write_pb", [True, False])
@pytest.mark.parametrize("ts", [float("nan"), 1e308, -1e308, float("inf")])
def test_every_event_at_a_timestamp_beyond_range_imports(tmp_path: Path, write_pb: bool, ts: float) -> None:
    # GIVEN a trace whose every event starts at NaN or 1e308 µs (before: a Skip or an OverflowError escaped)
    trace = _trace(tmp_path / "t.json", ts=ts)
    # WHEN it is imported THEN a session is written, dated by the file, and each event that is
    # converted is counted as skipped
    result = imp.import_trace(trace, imp.ImportOptions(out_dir=tmp_path / "out", write_pb=write_pb))
    assert result.session is not None
    if write_pb:
        assert result.stats is not None and result.stats.skipped["missing_field"] == 20  # the kernels
