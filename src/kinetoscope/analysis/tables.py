"""The analyses' table toolkit, for the layers above them (findings, report, viewer, cli): the one
public entry to ``analysis/_tables/``, whose modules say what each part does.

* ``column_arrays``: columns as numpy (``ints``, ``strings``, ``codes``, ``code_view``, ``encoded``, ``string_mask``);
* ``rank_slices``: tables split per rank (``per_rank``, ``rows_of``, ``concatenated``, ``for_rows``);
* ``masks``: string tests found once per table (``is_in``, ``starts_with``, ``matches``, ``not_empty``);
* ``selection``: rows chosen (``where``, ``of_rank``, ``device_work_rows``, ``launched_outside``);
* ``id_lookup``: rows by event id (``positions``, ``id_positions``, ``id_lookup``);
* ``group_sums``, ``code_groups``: rows grouped by integer codes, with sums;
* ``result_tables``: result tables (``rows``, ``pct``, ``frame_labels``);
* ``intervals``: unions, lengths and sweeps of time intervals;
* ``reuse``: what is found on a table kept while a ``reusing()`` block runs (``threaded`` across threads);
* ``examples``: one example event per row of a grouped result.

The analyses themselves import from those modules; ``prepared`` (tables made ready for the
analyses) is ``kinetoscope.analysis.prepared``.
"""

from __future__ import annotations

from kinetoscope.analysis._tables.column_arrays import (
    code_view,
    codes,
    encoded,
    ints,
    read_only,
    string_mask,
    strings,
)
from kinetoscope.analysis._tables.examples import EXAMPLE_FIELD, example_ids
from kinetoscope.analysis._tables.group_sums import Groups, group_sums, most_first
from kinetoscope.analysis._tables.id_lookup import Lookup, id_lookup, id_positions, positions
from kinetoscope.analysis._tables.intervals import length, merge, sweep
from kinetoscope.analysis._tables.masks import is_in, matches, not_empty, starts_with
from kinetoscope.analysis._tables.rank_slices import (
    RankKey,
    Tables,
    concatenated,
    for_rows,
    per_rank,
    rows_of,
    same_rows,
)
from kinetoscope.analysis._tables.result_tables import frame_labels, pct, rows
from kinetoscope.analysis._tables.reuse import TableCache, cached, peek, reusing, threaded
from kinetoscope.analysis._tables.selection import (
    DEVICE_WORK,
    MEMORY_WORK,
    device_work_rows,
    launched_outside,
    of_rank,
    where,
    without_args,
)

__all__ = [
    "DEVICE_WORK",
    "EXAMPLE_FIELD",
    "MEMORY_WORK",
    "Groups",
    "Lookup",
    "RankKey",
    "TableCache",
    "Tables",
    "cached",
    "code_view",
    "codes",
    "concatenated",
    "device_work_rows",
    "encoded",
    "example_ids",
    "for_rows",
    "frame_labels",
    "group_sums",
    "id_lookup",
    "id_positions",
    "ints",
    "is_in",
    "launched_outside",
    "length",
    "matches",
    "merge",
    "most_first",
    "not_empty",
    "of_rank",
    "pct",
    "peek",
    "per_rank",
    "positions",
    "read_only",
    "reusing",
    "rows",
    "rows_of",
    "same_rows",
    "starts_with",
    "string_mask",
    "strings",
    "sweep",
    "threaded",
    "where",
    "without_args",
]
