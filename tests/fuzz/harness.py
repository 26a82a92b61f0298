"""Drives one reader or command over a series of mutated inputs, in process, and collects what is
not allowed: an exception that is not kinetoscope's own (``KinetoscopeError``), an input that
takes over ``MAX_SECONDS``, a process that grows past ``MAX_RSS_BYTES``.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import psutil

from kinetoscope import KinetoscopeError

from .mutate import mutate

MAX_SECONDS = 10.0
MAX_RSS_BYTES = 1 << 30
Target = Callable[[bytes, Path], None]
# An ingest outcome that failed on an exception kinetoscope did not raise itself reads "TypeError: ..."
_UNTYPED_MESSAGE_RE = re.compile(r"^([A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)): ")
_OWN_ERRORS = frozenset()  # filled on first use: the names of KinetoscopeError and its subclasses


class TooSlowError(Exception):
    """An input ran past MAX_SECONDS (raised by the alarm)."""


@dataclass
class Failure:
    series: str
    index: int
    what: str
    where: str

    def __str__(self) -> str:
        return f"{self.series}#{self.index}: {self.what} at {self.where}"


@dataclass
class SeriesResult:
    inputs: int = 0
    refused: int = 0  # inputs a reader refused with kinetoscope's own error, as it should
    failures: list[Failure] = field(default_factory=list)


def own_error_names() -> frozenset[str]:
    global _OWN_ERRORS
    if not _OWN_ERRORS:
        found, todo = set(), [KinetoscopeError]
        while todo:
            cls = todo.pop()
            found.add(cls.__name__)
            todo.extend(cls.__subclasses__())
        _OWN_ERRORS = frozenset(found)
    return _OWN_ERRORS


def untyped_message(message: str) -> str | None:
    """The exception name in a failure message that reads ``Name: ...``, when it is not kinetoscope's."""
    match = _UNTYPED_MESSAGE_RE.match(message or "")
    return match.group(1) if match and match.group(1) not in own_error_names() else None


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise TooSlowError(f"over {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if "/kinetoscope/" in f.filename] or frames
    last = inside[-1] if inside else None
    return f"{Path(last.filename).name}:{last.lineno} {last.name}" if last else "?"


class RssWatch:
    """The largest resident set seen while inputs run, sampled every 5 ms by a thread (the
    process's lifetime peak would keep one bad input's figure for every later test)."""

    def __init__(self) -> None:
        self._process = psutil.Process()
        self.peak_bytes = 0
        self.start_bytes = 0  # the resident set when the input started: what earlier tests left is not its own
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak_bytes = max(self.peak_bytes, self._process.memory_info().rss)

    def reset(self) -> None:
        self.peak_bytes = self.start_bytes = self._process.memory_info().rss

    @property
    def grown_bytes(self) -> int:
        """How far the resident set grew past its size when the input started."""
        return max(0, self.peak_bytes - self.start_bytes)

    def __enter__(self) -> RssWatch:
        self.reset()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


Mutator = Callable[[bytes, str, int], bytes]


def run_series(
    name: str,
    seed: bytes,
    count: int,
    target: Target,
    work: Path,
    *,
    json: bool = False,
    mutator: Mutator | None = None,
) -> SeriesResult:
    """``target`` on inputs 0..count-1 of the series ``name`` mutated from ``seed`` (by ``mutator``
    where given, else ``mutate.mutate``)."""
    result = SeriesResult()
    with RssWatch() as watch:
        for index in range(count):
            _run_one(_Series(name, seed, target, work, json, watch, mutator), index, result)
            if result.failures and result.failures[-1].what.startswith("peak RSS"):
                break
    return result


@dataclass(frozen=True)
class _Series:
    name: str
    seed: bytes
    target: Target
    work: Path
    json: bool
    watch: RssWatch
    mutator: Mutator | None = None


def _run_one(series: _Series, index: int, result: SeriesResult) -> None:
    name, watch = series.name, series.watch
    if series.mutator is not None:
        data = series.mutator(series.seed, name, index)
    else:
        data = mutate(series.seed, name, index, json=series.json)
    folder = series.work / f"{name}-{index}"
    folder.mkdir(parents=True)
    started = time.perf_counter()
    quiet = io.StringIO()
    try:
        with _deadline(MAX_SECONDS), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            series.target(data, folder)
    except KinetoscopeError:
        result.refused += 1
    except RecursionError as exc:  # before Exception: it is one, and its traceback is thousands deep
        result.failures.append(Failure(name, index, "RecursionError", _where(exc)))
    except Exception as exc:  # noqa: BLE001 - every other exception is what the suite looks for
        result.failures.append(Failure(name, index, f"{type(exc).__name__}: {str(exc)[:200]}", _where(exc)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    elapsed = time.perf_counter() - started
    if elapsed > MAX_SECONDS:
        result.failures.append(Failure(name, index, f"took {elapsed:.1f} s", "-"))
    if watch.grown_bytes > MAX_RSS_BYTES:
        grown = f"peak RSS {watch.peak_bytes >> 20} MiB, {watch.grown_bytes >> 20} MiB over its start"
        result.failures.append(Failure(name, index, grown, "-"))
    watch.reset()
    result.inputs += 1
