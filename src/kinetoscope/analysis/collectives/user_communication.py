"""Users' own communication patterns (the ``communication`` category of ``--categories``) applied
where a dataset is read: the one hook through which they reach the analyses, the findings, the
viewer and ``verify``.

``patterns()`` is where they are read from: the category rules of the run's typed options
(``user_options.given()``; ``summary --categories FILE`` gives them). ``applied(events)`` fills
the ``collective`` column of the kernels they match that the built-in rules left without one, by the model's rule
(``model.collectives.of_user_kernel``), so every consumer of that column (the device-time split,
the category of device work, ``matched_collectives`` and the pairing across ranks, the findings)
counts them as communication alike. Without patterns the table is returned as it is.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis.settings.user_options import given
from kinetoscope.analysis.tables import encoded, is_in, not_empty
from kinetoscope.model import collectives, kinds
from kinetoscope.model.category_rules import Rules


def patterns() -> tuple[str, ...]:
    """The ``communication`` patterns of the user's category rules in effect (none without them)."""
    return _patterns_of(given().categories)


@functools.lru_cache(maxsize=8)
def _patterns_of(rules: Rules) -> tuple[str, ...]:
    return collectives.user_patterns(rules) if rules else ()


def applied(events: pa.Table, given: tuple[str, ...] | None = None) -> pa.Table:
    """``events`` with the collective of each kernel the user's patterns (``given``, else
    ``patterns()``) match and the built-in rules did not decide; the same table where none does."""
    found = patterns() if given is None else given
    if not found or "collective" not in events.column_names or "name" not in events.column_names:
        return events
    undecided = np.flatnonzero(is_in(events, "kind", (kinds.KERNEL,)) & ~not_empty(events, "collective"))
    if not len(undecided):
        return events
    code, distinct = encoded(events.column("name").take(pa.array(undecided, pa.int64())))
    by_name = np.asarray([*collectives.of_user_kernels(distinct.to_pylist(), found), ""], dtype=object)
    decided = by_name[np.where(code >= 0, code, len(by_name) - 1)]
    hit = decided != ""
    if not hit.any():
        return events
    values = np.full(events.num_rows, None, dtype=object)
    values[undecided[hit]] = decided[hit]
    mask = np.zeros(events.num_rows, dtype=bool)
    mask[undecided[hit]] = True
    column = events.column("collective")
    merged = pc.if_else(pa.array(mask), pa.array(values, pa.string()), column.cast(pa.string()))
    if pa.types.is_dictionary(column.type):  # the column keeps its type
        merged = pc.dictionary_encode(merged).cast(column.type)
    return events.set_column(events.column_names.index("collective"), "collective", merged)
