"""One large trace read by several processes at once, into exactly the rows one process gives.

This process reads the file and cuts its event array into spans at event boundaries, as the
serial reader does (``kineto_json``), but decodes each span only into the JSON text of its
events (``msgspec.Raw``: no Python object per field). The texts are grouped into the serial
reader's batches (same events, same indexes) and each batch is sent to a worker process,
which decodes it into records and turns them into columns (``columns.columnize``): the two
steps that cost most and need nothing but the batch. The batches come back in the order they
were sent and are kept (``TraceIngest.keep``) as the serial path keeps them; nesting, links
and the writing of rows stay in this process.

What must stay global is kept here: event indexes (hence ids) come from the reader; problems
are gathered per batch and replayed in the serial order (the reader's problems before each
batch, then that batch's), with an unknown category reported once per trace; at most
``IN_FLIGHT_PER_WORKER`` batches per worker are in flight, so memory stays bounded.

A span the record decoder refuses although its texts decoded (a value that is not an object,
a number beyond float64), where the serial reader walks the span event by event, makes the
whole trace be read again by the serial path: the result is the same in every case, only
slower on such input. So does any other failure of the parallel read (a batch that raises, a
lost worker): the serial path then raises it where it arises, with the problems found before.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.kineto.kineto_json import iter_trace_records, paused_gc
from kinetoscope.format.problems import Problem, ProblemLog
from kinetoscope.ingest.rows.batch import UNKNOWN_CATEGORY, Batch, IndexedRecord, SessionContext
from kinetoscope.ingest.rows.columns import KindCodes, columnize
from kinetoscope.ingest.rows.trace_events import RowSpool, TraceIngest
from kinetoscope.model import device_processes

# A trace file smaller than this is read by this process alone: workers would cost more than they save.
PARALLEL_TRACE_MIN_BYTES = 8 << 20
MAX_TRACE_WORKERS = 4  # the default (one per CPU) stops here: this process's own part bounds the gain
IN_FLIGHT_PER_WORKER = 2


def trace_workers(trace: Path, jobs: int, min_bytes: int = PARALLEL_TRACE_MIN_BYTES) -> int:
    """How many worker processes read ``trace`` (1: this process alone).

    More than one only for a trace file of at least ``min_bytes``, with msgspec installed, on a
    platform that forks, from a process running no other Python thread (a fork copies only the
    calling thread, and the locks other threads hold).
    """
    if jobs < 2 or not parallel_possible():
        return 1
    try:
        size_bytes = trace.stat().st_size
    except OSError:
        return 1  # the reader says what is wrong with it
    return jobs if size_bytes >= min_bytes else 1


def parallel_possible() -> bool:
    forks = "fork" in multiprocessing.get_all_start_methods()
    return forks and threading.active_count() == 1 and trace_records.codec().decode_span is not None


def read_trace(
    trace: Path, ctx: SessionContext, problems: ProblemLog, spool: RowSpool, *, batch_size: int, workers: int
) -> TraceIngest:
    """``trace`` read into a ``TraceIngest`` (``finish`` not yet called), by ``workers`` processes."""
    if workers > 1:
        try:
            return _read_parallel(trace, ctx, problems, spool, batch_size=batch_size, workers=workers)
        except Exception:  # noqa: BLE001 - a refused span, a failed batch, a lost worker: read it again
            # serially, which walks a refused span event by event and raises a failure where it arises,
            # with the problems found before it (``problems`` is untouched until the parallel read ends)
            spool.clear()
    ingest = TraceIngest(ctx, problems, spool)
    for batch in iter_trace_records(trace, problems, batch_size):
        ingest.add(batch)
    return ingest


class _RefusedError(Exception):
    """The record decoder refused a span whose texts decoded: the serial path must read the trace."""


@dataclass
class _Part:
    """What one batch gave: its columns (None when it failed), its problems, and its error."""

    batch: Batch | None
    problems: _BatchLog
    error: BaseException | None = None
    refused: bool = False


class _BatchLog(ProblemLog):
    """The problems of one batch; unknown categories are kept apart, with their place among the
    records, since whether they are reported depends on the batches before (once per trace)."""

    def __init__(self, max_per_kind: int) -> None:
        super().__init__(max_per_kind)
        self.categories: list[tuple[int, Problem]] = []

    def add(self, file: str, where: str, kind: str, message: str) -> None:
        if kind == UNKNOWN_CATEGORY:
            self.categories.append((len(self.records), Problem(file, where, kind, message)))
        else:
            super().add(file, where, kind, message)


class _Relay(ProblemLog):
    """The reader's problems, cut into the parts recorded before each batch."""

    def __init__(self, max_per_kind: int) -> None:
        super().__init__(max_per_kind)
        self.part = ProblemLog(max_per_kind)

    def add(self, file: str, where: str, kind: str, message: str) -> None:
        self.part.add(file, where, kind, message)

    def cut(self) -> ProblemLog:
        part, self.part = self.part, ProblemLog(self.max_per_kind)
        return part


@dataclass
class _InOrder:
    """Batches kept as they come back, in the order they were read; problems in the serial order."""

    ingest: TraceIngest
    log: ProblemLog
    reported: set[str] = field(default_factory=set)  # unknown-category messages already in ``log``

    def keep(self, reader_problems: ProblemLog, part: _Part) -> None:
        if part.refused:
            raise _RefusedError
        if part.error is not None or part.batch is None:
            raise RuntimeError("a batch failed in a worker") from part.error
        self.log.merge(reader_problems)
        self._replay(part.problems)
        self.ingest.keep(part.batch)

    def _replay(self, found: _BatchLog) -> None:
        """``found``'s problems added to the log as the serial path adds them."""
        categories = iter(found.categories)
        upcoming = next(categories, None)
        for position, problem in enumerate([*found.records, None]):
            while upcoming is not None and upcoming[0] == position:
                if upcoming[1].message not in self.reported:
                    self.reported.add(upcoming[1].message)
                    self._add(upcoming[1])
                upcoming = next(categories, None)
            if problem is not None:
                self._add(problem)
        kept = Counter(problem.kind for problem in found.records)
        beyond = Counter({kind: count - kept[kind] for kind, count in found.counts().items() if count > kept[kind]})
        if beyond:  # problems the batch counted past its limit: the log has its limit of those kinds already
            self.log.merge(ProblemLog(self.log.max_per_kind, [], beyond))

    def _add(self, problem: Problem) -> None:
        self.log.add(problem.file, problem.where, problem.kind, problem.message)


def _read_parallel(
    trace: Path, ctx: SessionContext, problems: ProblemLog, spool: RowSpool, *, batch_size: int, workers: int
) -> TraceIngest:
    log = ProblemLog(problems.max_per_kind)  # this trace's problems, merged into ``problems`` when read
    ingest = TraceIngest(ctx, log, spool)
    relay = _Relay(problems.max_per_kind)
    order = _InOrder(ingest, log)
    in_flight: deque[tuple[ProblemLog, cf.Future[_Part]]] = deque()
    with _pool(workers) as pool:
        for batch in iter_trace_records(trace, relay, batch_size, decode_span=_raw_decoder()):
            in_flight.append((relay.cut(), _submit(pool, batch, ctx, problems.max_per_kind)))
            while len(in_flight) >= workers * IN_FLIGHT_PER_WORKER:
                _keep_next(order, in_flight)
        while in_flight:
            _keep_next(order, in_flight)
    log.merge(relay.cut())
    problems.merge(log)
    return ingest


def _keep_next(order: _InOrder, in_flight: deque[tuple[ProblemLog, cf.Future[_Part]]]) -> None:
    reader_problems, future = in_flight.popleft()
    order.keep(reader_problems, future.result())


@contextmanager
def _pool(workers: int) -> Iterator[cf.ProcessPoolExecutor]:
    """Forked worker processes: they start with this process's modules already imported."""
    pool = cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _submit(
    pool: cf.ProcessPoolExecutor, batch: list[tuple[int, Any]], ctx: SessionContext, max_per_kind: int
) -> cf.Future[_Part]:
    """The batch sent to a worker: the texts of its events as one JSON array, their indexes, and
    the records among them (events read one by one from a damaged span, or the last of the array)."""
    pieces: list[Any] = []
    index: list[np.ndarray] = []
    records: list[tuple[int, Any]] = []  # (position in the batch, record)
    at = 0
    while at < len(batch):
        first, value = batch[at]
        if type(value) is not _SpanTexts:
            records.append((at, value))
            index.append(np.asarray([first], np.int64))
            at += 1
            continue
        count = min(value.left(first), len(batch) - at)
        pieces.append(value.run_text(first, count))
        index.append(np.arange(first, first + count, dtype=np.int64))
        at += count
    array_text = b"".join((b"[", b",".join(pieces), b"]"))
    return pool.submit(_columnize_texts, array_text, np.concatenate(index), records, ctx, max_per_kind)


@dataclass(eq=False)
class _SpanTexts:
    """A decoded span: its text and the texts of its events (``msgspec.Raw``, views into it); the
    reader's events of the span are this one object (repeated), told apart by their event index."""

    span: bytes
    texts: list[Any]
    first_index: int = -1  # the event index of the span's first event, set when first seen

    def left(self, index: int) -> int:
        """How many of the span's events there are from the one at event index ``index`` on."""
        if self.first_index < 0:
            self.first_index = index  # a span's events come in order: the first one seen is its first
        return len(self.texts) - (index - self.first_index)

    def run_text(self, first: int, count: int) -> memoryview:
        """The text of ``count`` events from event index ``first``: the span's bytes from the first
        one's start to the last one's end (the commas and spaces between them included)."""
        lo = first - self.first_index
        start, last = self._offset(self.texts[lo]), self.texts[lo + count - 1]
        return memoryview(self.span)[start : self._offset(last) + len(last)]

    def _offset(self, text: Any) -> int:
        """Where ``text`` lies in the span: msgspec decodes ``Raw`` values as views of its input."""
        at: int = np.frombuffer(text, np.uint8).ctypes.data - np.frombuffer(self.span, np.uint8).ctypes.data
        if not 0 <= at < len(self.span) or self.span[at] != memoryview(text)[0]:
            raise _RefusedError("msgspec.Raw is not a view of the decoded text")
        return at


def _columnize_texts(
    array_text: bytes, index: np.ndarray, records: list[tuple[int, Any]], ctx: SessionContext, max_per_kind: int
) -> _Part:
    """What a worker runs: a batch's texts decoded into records (``records`` put at their places
    among them), then turned into columns."""
    try:
        decoded = iter(_decode_records(array_text))
    except _RefusedError:
        return _Part(None, _BatchLog(max_per_kind), refused=True)
    if not records:
        return _columnize_batch(list(zip(index.tolist(), decoded, strict=True)), ctx, max_per_kind)
    placed = dict(records)
    every = [placed[at] if at in placed else next(decoded) for at in range(len(index))]
    return _columnize_batch(list(zip(index.tolist(), every, strict=True)), ctx, max_per_kind)


def _columnize_batch(batch: list[IndexedRecord], ctx: SessionContext, max_per_kind: int) -> _Part:
    found = _BatchLog(max_per_kind)
    if device_processes.names_one(batch):  # its device tasks are placed by state kept across batches
        return _Part(None, found, refused=True)
    try:
        with paused_gc():
            return _Part(columnize(batch, ctx, KindCodes(found, ctx.file), found), found)
    except Exception as exc:  # noqa: BLE001 - raised in this process, in order, as the serial path raises it
        return _Part(None, found, exc)


def _decode_records(array_text: bytes) -> list[Any]:
    codec = trace_records.codec()
    assert codec.decode_span is not None
    try:
        return codec.decode_span(array_text)
    except codec.errors as exc:
        raise _RefusedError from exc


def _raw_decoder() -> Callable[[bytes], list[Any]]:
    """Span text -> its events, each as the span's ``_SpanTexts``; refuses (as the record decoder
    refuses) invalid UTF-8 and text that is not JSON. A value that is not an object passes here and
    is refused by the record decoder in the worker (the trace is then read by the serial path)."""
    import msgspec  # present whenever the parallel path runs (``parallel_possible``)

    decode = msgspec.json.Decoder(list[msgspec.Raw]).decode

    def decode_texts(span: bytes) -> list[Any]:
        if not span.isascii():
            span.decode("utf-8")
        texts = decode(span)
        return [_SpanTexts(span, texts)] * len(texts)

    return decode_texts
