"""Bounds of the gzip reader: a small file that expands to gigabytes costs neither memory nor disk."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from kinetoscope._errors import ConfigError
from kinetoscope.format.kineto import trace_source
from kinetoscope.format.kineto.trace_source import GzipLimits, TraceSource
from kinetoscope.format.problems import TOO_LARGE, TRUNCATED, ProblemLog

HEAD = b'{"schemaVersion": 1, "traceEvents": ['
EVENT = b'{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}'


def write_bomb(path: Path, blank_bytes: int, tail: bytes = EVENT + b"]}") -> Path:
    """A gzip trace whose event array opens after ``blank_bytes`` blanks (about 1,000 to 1 compressed)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [deflate.compress(HEAD)]
    block = b" " * (1 << 20)
    for _ in range(blank_bytes >> 20):
        parts.append(deflate.compress(block))
    parts.append(deflate.compress(tail))
    parts.append(deflate.flush())
    path.write_bytes(b"".join(parts))
    return path


def read_sizes(source: TraceSource, size: int) -> list[int]:
    sizes = []
    while chunk := source.read(size):
        sizes.append(len(chunk))
    return sizes


def read_total(path: Path, size: int) -> tuple[int, ProblemLog]:
    """Reads ``path`` whole through a TraceSource, ``size`` bytes at a time: (bytes read, problems)."""
    problems = ProblemLog()
    source = TraceSource(path, problems)
    try:
        return sum(read_sizes(source, size)), problems
    finally:
        source.close()


def test_each_read_inflates_at_most_what_it_asks_for(tmp_path: Path) -> None:
    # GIVEN a 32 MB-expanding gzip of 33 KB (one compressed block inflates to 64 MB before the fix)
    path = write_bomb(tmp_path / "bomb.json.gz", 32 << 20)
    # WHEN it is read 1 MiB at a time
    source = TraceSource(path, ProblemLog())
    try:
        sizes = read_sizes(source, 1 << 20)
    finally:
        source.close()
    # THEN no read hands out more than asked, and the whole stream is read
    assert max(sizes) <= 1 << 20
    assert sum(sizes) == len(HEAD) + (32 << 20) + len(EVENT) + 2


def test_a_gzip_bomb_stops_at_its_bound_with_a_problem_naming_the_setting(tmp_path: Path) -> None:
    # GIVEN a 70 KB gzip trace that expands to 72 MB (1,000 times its size; the floor is 64 MiB)
    path = write_bomb(tmp_path / "bomb.json.gz", 72 << 20)
    assert path.stat().st_size < 200_000
    # WHEN it is read
    total, problems = read_total(path, 4 << 20)
    # THEN reading stops at the bound, with a problem that says how to raise it
    assert total <= trace_source.RATIO_FLOOR_BYTES + (4 << 20)
    assert problems.counts() == {TOO_LARGE: 1}
    assert trace_source.MAX_RATIO_ENV in problems.records[0].message


def test_the_bound_is_raised_by_its_limits(tmp_path: Path) -> None:
    # GIVEN the same bomb, with the ratio raised past its expansion
    path = write_bomb(tmp_path / "bomb.json.gz", 72 << 20)
    with trace_source.limited_by(GzipLimits(max_ratio=100_000)):
        total, problems = read_total(path, 4 << 20)
    # THEN it is read whole
    assert total == len(HEAD) + (72 << 20) + len(EVENT) + 2
    assert not problems


def test_the_absolute_bound_applies_below_the_ratio(tmp_path: Path) -> None:
    path = write_bomb(tmp_path / "bomb.json.gz", 4 << 20)
    with trace_source.limited_by(GzipLimits(max_bytes=1 << 20)):
        total, problems = read_total(path, 256 << 10)
    assert total <= 2 << 20
    assert problems.counts() == {TOO_LARGE: 1}


@pytest.mark.parametrize("value", [0, -3, "lots", 2.5])
def test_a_bad_limit_is_a_config_error(value: object) -> None:
    with pytest.raises(ConfigError, match="max_ratio"):
        GzipLimits(max_ratio=value)  # type: ignore[arg-type]


def test_the_reader_reads_no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the command line's variable set, but no limits handed in
    path = write_bomb(tmp_path / "bomb.json.gz", 72 << 20)
    monkeypatch.setenv(trace_source.MAX_RATIO_ENV, "100000")
    # WHEN the trace is read below the command line THEN the default bound applies
    _, problems = read_total(path, 4 << 20)
    assert problems.counts() == {TOO_LARGE: 1}


def test_a_cut_stream_is_still_reported_as_truncated(tmp_path: Path) -> None:
    path = write_bomb(tmp_path / "t.json.gz", 2 << 20)
    path.write_bytes(path.read_bytes()[:-12])
    problems = ProblemLog()
    source = TraceSource(path, problems)
    try:
        read_sizes(source, 1 << 20)
    finally:
        source.close()
    assert problems.counts() == {TRUNCATED: 1}


def test_concatenated_members_are_read_whole(tmp_path: Path) -> None:
    first = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    second = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    data = first.compress(HEAD) + first.flush() + second.compress(EVENT + b"]}") + second.flush()
    path = tmp_path / "t.json.gz"
    path.write_bytes(data)
    problems = ProblemLog()
    source = TraceSource(path, problems)
    try:
        text = b"".join(iter(lambda: source.read(7), b""))
    finally:
        source.close()
    assert text == HEAD + EVENT + b"]}"
    assert not problems
