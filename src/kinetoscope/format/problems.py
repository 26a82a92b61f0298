"""The problem log: what a reader found wrong in its input, kept next to what it could read.

Readers never stop at the first bad record: they skip it, add a ``Problem`` naming the file,
the place and what is wrong, and go on. The log keeps a bounded number of records per kind
(so a file with a million bad events does not fill memory) but counts every one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

DEFAULT_RECORDS_PER_KIND = 20

# Problem kinds of the trace readers (converters add their own: missing_field, outside_window...).
TRUNCATED = "truncated"
MALFORMED = "malformed_json"
NOT_AN_OBJECT = "not_an_object"
ENCODING = "invalid_utf8"
NO_EVENTS = "no_trace_events"
COMPRESSION = "corrupt_compression"
DUPLICATE_KEY = "duplicate_key"  # a key a JSON object holds twice, read differently by other tools
OUT_OF_RANGE = "out_of_range"  # a header value beyond what it can mean (a rank of 2^40)
TOO_LARGE = "too_large"  # a compressed file expands past its bound (trace_source.expansion_limit_bytes)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: ``where`` is a place in ``file`` (``event 12``, ``byte 4096``)."""

    file: str
    where: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.message}"


@dataclass
class ProblemLog:
    """Problems found while reading; ``records`` keeps at most ``max_per_kind`` per kind, ``counts`` all."""

    max_per_kind: int = DEFAULT_RECORDS_PER_KIND
    records: list[Problem] = field(default_factory=list)
    _counts: Counter[str] = field(default_factory=Counter)

    def add(self, file: str, where: str, kind: str, message: str) -> None:
        self._counts[kind] += 1
        if self._counts[kind] <= self.max_per_kind:
            self.records.append(Problem(file, where, kind, message))

    def merge(self, other: ProblemLog) -> None:
        """Add the problems of ``other`` (its counts, and its records within this log's limit)."""
        kept = Counter(problem.kind for problem in self.records)
        for problem in other.records:
            if kept[problem.kind] < self.max_per_kind:
                self.records.append(problem)
                kept[problem.kind] += 1
        self._counts.update(other._counts)

    def counts(self) -> dict[str, int]:
        """Kind -> number of problems of that kind, including those whose records were not kept."""
        return dict(self._counts)

    @property
    def total(self) -> int:
        return sum(self._counts.values())

    def __bool__(self) -> bool:
        return bool(self._counts)

    def summary_lines(self) -> list[str]:
        """The kept records, then one line per kind whose records were cut."""
        lines = [str(problem) for problem in self.records]
        for kind, count in sorted(self._counts.items()):
            if count > self.max_per_kind:
                lines.append(f"... {count - self.max_per_kind} more problem(s) of kind {kind!r} not shown")
        return lines
