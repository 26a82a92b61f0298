"""What a report is made with (the analyses' options, the window, the threads), the cuts those
settings make, and whether a dataset is made rank by rank, for the command line's ``summary`` and
the viewer alike. Light: the command line reads it before the analyses are imported."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kinetoscope import _resources as resources

if TYPE_CHECKING:
    from kinetoscope.analysis.settings.user_options import UserOptions

MAX_THREADS = 4  # more threads than this mostly wait for each other (the GIL)
# From this many events on, a dataset of several ranks is summarised rank by rank: below it,
# reading every rank at once is a little quicker (its input shapes and dictionaries are read once).
BY_RANK_EVENTS = 2_000_000
# Below this many events every rank at once is analysed on one thread unless the user asked for more: the
# analyses and rules then take about a second of CPU time or less, which a second thread hardly
# shortens (none on two cores), while the rows each thread holds at once add to the peak (the
# 151,388 events of HTA's df_index_resolver trace: 1.21 against 1.28 s, 193 against 215 MiB).
THREADED_EVENTS = 1_000_000
# From this many events (every rank at once, or one rank's rows rank by rank) the analyses run one after
# another again unless the user asked for threads: each running analysis holds 25-45 bytes per event of its
# own, so a second one at once costs more memory than the rows themselves leave room for (10 M tiny events:
# 2,090-2,180 against 1,860-1,890 MB at the peak, for about 5 % more wall time on two cores).
SERIAL_EVENTS = 4_000_000


@dataclass(frozen=True)
class ReportOptions:
    """How a report is made, for the command line's ``summary`` and the viewer's pages alike.

    ``only``: the analyses picked (no findings then; (): every analysis and the findings);
    ``by_rank``: read and analyse one rank at a time (None: by the dataset's size, ``by_rank_fits``);
    ``scheduler``: a Dask scheduler whose workers make the ranks' shares; ``workers``: processes
    making them side by side on this machine (None: by the CPUs and memory, ``rank_pool``);
    ``user``: the user's category patterns and roofline device (``analysis.settings.user_options``; None:
    none), carried with each rank's task to the process that analyses it."""

    top: int = 10
    only: tuple[str, ...] = ()
    run: str | None = None
    window_launched_only: bool = False
    steady_state: bool = False
    short_kernel_us: float = 10.0
    threads: int = 1  # threads computing the analyses and the findings
    threads_asked: bool = False  # ``threads`` given by the user (else the default, one below THREADED_EVENTS)
    by_rank: bool | None = None
    scheduler: str | None = None
    workers: int | None = None
    user: UserOptions | None = None


Settings = ReportOptions  # what a report is made with


def default_threads() -> int:
    """The CPUs this process may use (its affinity, its control groups' CPU quota), at most MAX_THREADS."""
    return max(1, min(resources.cpus(), MAX_THREADS))


def analysis_threads(tables: dict[str, Any], options: ReportOptions, rank_by_rank: bool = False) -> int:
    """The threads that analyse ``tables`` (every rank at once, or one rank's ``rank_by_rank``):
    those the user asked for, else the default below ``SERIAL_EVENTS`` events, from
    ``THREADED_EVENTS`` on where every rank is read at once, else one."""
    events = tables.get("events")
    rows = events.num_rows if events is not None else 0
    least = 0 if rank_by_rank else THREADED_EVENTS
    return options.threads if options.threads_asked or least <= rows < SERIAL_EVENTS else 1


def freeing_after_each(tables: dict[str, Any], options: ReportOptions) -> Callable[[], object] | None:
    """What hands the C heap's free pages back to the system (``malloc_trim``) after each analysis
    where one thread runs them over ``SERIAL_EVENTS`` events or more: one analysis after another,
    the freed pages of each stayed resident under the next one's (10 M tiny events: 1,678 -> 1,618
    MB at the peak, for about 1 s more in the kernel); else None."""
    events = tables.get("events")
    if options.threads != 1 or events is None or events.num_rows < SERIAL_EVENTS:
        return None
    from kinetoscope._freed_memory import release_freed_memory

    return release_freed_memory


def windowed(tables: dict[str, Any], settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``tables`` without the device work launched before the window, where ``window_launched_only``
    says; those cut to each rank's steady-state window, where ``steady_state`` says, prepared):
    the findings read the first of ``tables``, the analyses the second, ``steady_state`` the first."""
    from kinetoscope.analysis import in_steady_state, launched_in_window, prepared

    whole = launched_in_window(tables) if settings.window_launched_only else tables
    return whole, prepared(in_steady_state(whole) if settings.steady_state else whole)


def given_to_analyses(settings: Settings) -> contextlib.AbstractContextManager[None]:
    """The block in which the analyses and rules read ``settings.user`` (None: as the caller set them)."""
    if settings.user is None:
        return contextlib.nullcontext()
    from kinetoscope.analysis.settings.user_options import using

    return using(settings.user)


def analysis_options(settings: Settings) -> tuple[Any, ...]:
    """The analyses' options of ``top`` and ``short_kernel_us``."""
    from kinetoscope.analysis import IdleOptions, TopOptions

    return TopOptions(top=settings.top), IdleOptions(short_kernel_ns=round(settings.short_kernel_us * 1000))


def first_ts_ns(dataset: Any) -> int:
    """The dataset's first event time, of any run (the viewer's time origin, the deep links')."""
    return int(dataset.sql("SELECT coalesce(min(ts_ns), 0) AS t0 FROM events").column("t0").to_pylist()[0])


def by_rank_fits(dataset: Any, run: str | None, columns: dict[str, Any] | None) -> bool:
    """Whether ``dataset`` is best read rank by rank: a local dataset of several ranks (of ``run``)
    holding ``BY_RANK_EVENTS`` events or more (read from its footers), and analyses that read them
    (``columns``, None: all). A damaged part says no: reading every rank at once says which."""
    if not hasattr(dataset, "path") or len(dataset.ranks(run)) < 2 or (columns is not None and "events" not in columns):
        return False
    try:
        return bool(dataset.rows("events") >= BY_RANK_EVENTS)
    except (OSError, ValueError):
        return False
