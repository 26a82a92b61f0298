"""Compare mode: two datasets served side by side (``kinetoscope view BASE --compare NEW``).

BASE keeps the single-dataset API at ``/api/...``; NEW's is the same API under ``/new/api/...``.
``/api/compare`` answers both sides' steps (``ProfilerStep#N``, offsets from each side's own run
start, as everywhere in the viewer) and the comparison of ``kinetoscope diff --json`` (its verdict,
comparability check and waterfall included), computed once on first request; each waterfall row
behind a part also says the event name it stands for (``event_name``). ``/api/compare/events``
answers, for a name on each side and a step, the first such event of that step on each side (the
page jumps there from a waterfall row).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from kinetoscope._errors import CommandError
from kinetoscope.analysis import ANALYSES, needed_columns
from kinetoscope.analysis.compare.diff_report import Run, compare_runs
from kinetoscope.analysis.tables import ints, starts_with, strings, where
from kinetoscope.analysis.time.steps import STEP_PREFIX
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import event_brief, js_safe_tree

NEW_PREFIX = "/new"
TOP_ROWS = 50


def diff_columns() -> dict[str, Any]:
    """The columns the comparison reads: the analyses' and the ops' ``args`` (their shapes)."""
    columns: dict[str, Any] = dict(needed_columns(ANALYSES))
    if "args" not in columns["events"]:
        columns["events"] = (*columns["events"], "args")
    return columns


def check_one_run(index: ViewerIndex, label: str) -> None:
    """Compare mode needs one run a side: a dataset of several (or none) is refused, named."""
    runs = Dataset(index.dataset.path).runs
    if len(runs) != 1:
        raise CommandError(
            f"{label}: {len(runs)} runs ({', '.join(runs) or 'none'}); compare mode needs one run a side",
            exit_code=2,
        )


def load_run(index: ViewerIndex, label: str) -> Run:
    """The dataset's one run as the comparison reads it."""
    check_one_run(index, label)
    with Dataset(index.dataset.path) as dataset:
        tables = dataset.load(diff_columns())
    return Run(label, tables)


def steps_of(run: Run, t0_ns: int) -> list[dict[str, int]]:
    """Each ``ProfilerStep#N``: its number and its span over all ranks, from the run start."""
    events = run.tables["events"]
    marks = where(events, starts_with(events, "name", STEP_PREFIX))
    spans: dict[int, tuple[int, int]] = {}
    for name, ts, dur in zip(strings(marks, "name"), ints(marks, "ts_ns").tolist(), ints(marks, "dur_ns").tolist(),
                             strict=True):
        suffix = name[len(STEP_PREFIX):]
        if not suffix.isdigit():
            continue
        lo, hi = spans.get(int(suffix), (ts, ts + dur))
        spans[int(suffix)] = (min(lo, ts), max(hi, ts + dur))
    return [{"step": n, "start_ns": lo - t0_ns, "end_ns": hi - t0_ns} for n, (lo, hi) in sorted(spans.items())]


def event_name(row: dict[str, Any]) -> str:
    """The name of the events a waterfall row behind a part stands for: its name, but an op's
    without the input dims a shape row adds (``"aten::mm [[8, 8], [8, 8]]"`` -> ``"aten::mm"``)."""
    name = str(row["name"])
    return name.split(" [", 1)[0] if row.get("what") == "shape" else name


def with_event_names(waterfall: dict[str, Any]) -> dict[str, Any]:
    """The waterfall with ``event_name`` on each row behind a part."""
    parts = [{**part, "behind": [{**row, "event_name": event_name(row)} for row in part["behind"]]}
             for part in waterfall.get("parts", [])]
    return {**waterfall, "parts": parts}


def first_event(index: ViewerIndex, name: str, start_ns: int, end_ns: int) -> dict[str, Any] | None:
    """The brief of the first event named exactly ``name`` starting in [start_ns, end_ns) (offsets
    from the run start), else the first anywhere; None when there is none."""
    con = index.cursor()
    sql = ("SELECT ev.id FROM ev JOIN names ON names.name_id = ev.name WHERE names.name = ? {} "
           "ORDER BY ev.ts, ev.id LIMIT 1")
    found = con.execute(sql.format("AND ev.ts >= ? AND ev.ts < ?"), [name, start_ns, end_ns]).fetchone()
    found = found or con.execute(sql.format(""), [name]).fetchone()
    if found is None:
        return None
    return event_brief(index, [int(found[0])]).get(int(found[0]))


@dataclass
class ComparePair:
    """BASE and NEW as the viewer serves them, with how each was named on the command line."""

    base: ViewerIndex
    new: ViewerIndex
    base_label: str
    new_label: str
    _report: dict[str, Any] | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        check_one_run(self.base, self.base_label)
        check_one_run(self.new, self.new_label)

    def report(self) -> dict[str, Any]:
        """Both sides' steps and the diff (top TOP_ROWS rows a table), computed once."""
        with self._lock:
            if self._report is None:
                base, new = load_run(self.base, self.base_label), load_run(self.new, self.new_label)
                self._report = {
                    "base": {"label": self.base_label, "steps": steps_of(base, self.base.t0_ns)},
                    "new": {"label": self.new_label, "steps": steps_of(new, self.new.t0_ns)},
                    "diff": js_safe_tree(self._diff(base, new)),
                }
            return self._report

    @staticmethod
    def _diff(base: Run, new: Run) -> dict[str, Any]:
        found = compare_runs(base, new, top=TOP_ROWS)
        return {**found, "waterfall": with_event_names(found["waterfall"])}

    def events(self, base_name: str, new_name: str, step: int) -> dict[str, Any]:
        """The first event of ``base_name`` in BASE's step ``step`` and of ``new_name`` in NEW's
        (anywhere when the side lacks that step, or the name in it); None on a side without it."""
        report = self.report()
        out: dict[str, Any] = {"step": step}
        for side, index, name in (("base", self.base, base_name), ("new", self.new, new_name)):
            span = next((s for s in report[side]["steps"] if s["step"] == step), None)
            start, end = (span["start_ns"], span["end_ns"]) if span else (0, 0)
            out[side] = first_event(index, name, start, end) if name else None
        return out

