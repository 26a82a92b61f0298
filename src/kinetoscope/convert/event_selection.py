"""Which events of a batch the converter acts on, and how: most are decided by their category alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kinetoscope.format.kineto.trace_records import ParsedRecord, TraceRecord
from kinetoscope.model import execution as ke
from kinetoscope.model import kinds

Batch = list[tuple[int, TraceRecord]]
ArgsDecoder = Callable[[Sequence[TraceRecord]], list[dict[str, Any]]]

# Category -> what its events are, decided before anything else of the event is read.
_FRAMEWORK = ("framework", "")
_LAUNCH_FLOW = ("flow", "")
_CATEGORY_CODES: dict[str, ke.Action] = {
    **{category: _FRAMEWORK if rule[0] == kinds.FRAMEWORK else rule for category, rule in kinds.CATEGORIES.items()},
    **dict.fromkeys(kinds.FLOW_CATEGORIES, _FRAMEWORK),
    **dict.fromkeys(kinds.LAUNCH_FLOW_CATEGORIES, _LAUNCH_FLOW),
}
# Names that make an event of a framework category matter (allocator, collective and c10d events).
_SPECIAL_NAMES = (kinds.MEMORY_EVENT, kinds.CALLER_PREFIX, *kinds.COLLECTIVE_PREFIXES)


def parsed_records(batches: Iterable[list[tuple[int, dict[str, Any]]]]) -> Iterator[Batch]:
    """Batches of event dicts as batches of records (convert with ``decode_args=parsed_args``)."""
    for batch in batches:
        yield [(position, ParsedRecord(event)) for position, event in batch]


def parsed_args(records: Sequence[TraceRecord]) -> list[dict[str, Any]]:
    """The args of ``ParsedRecord``s ({} when absent or not an object)."""
    return [record.args if isinstance(record.args, dict) else {} for record in records]


def select(batch: Batch) -> tuple[list[tuple[int, TraceRecord, ke.Action]], int]:
    """(the events to act on, with their action; how many others are framework events).

    Most events are decided by their category alone: a framework event whose name is not
    special costs a dictionary lookup and a prefix test. Anything unusual is classified by
    ``model.execution.classify``, which this loop agrees with event for event.
    """
    codes = _CATEGORY_CODES
    flow_phases = kinds.FLOW_PHASES
    work: list[tuple[int, TraceRecord, ke.Action]] = []
    framework = 0
    for item in batch:
        record = item[1]
        category = record.cat
        code = codes.get(category) if category.__class__ is str else None
        if code is _FRAMEWORK:
            name = record.name
            if name.__class__ is not str or not name.startswith(_SPECIAL_NAMES):
                ph = record.ph
                framework += ph != "M" and ph not in flow_phases
                continue
        elif code is _LAUNCH_FLOW:
            if record.ph in flow_phases:
                work.append((item[0], record, ke.FLOW))
                continue
        elif code is not None:
            ph = record.ph
            if ph == "X":
                work.append((item[0], record, code))
            else:
                framework += ph != "M" and ph not in flow_phases
            continue
        action, counted = ke.classify(record)
        framework += counted
        if action is not None:
            work.append((item[0], record, action))
    return work, framework
