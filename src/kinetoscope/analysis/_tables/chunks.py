"""Row chunks: a pass over a rank's rows that would copy every row (a cast, a float64 copy of
weights, a mask, the rows' positions) reads ``CHUNK_ROWS`` rows at a time instead, so that each
copy takes a chunk's 8 MB, not 8 bytes per row of the rank (10 M tiny events: 80 MB a copy)."""

from __future__ import annotations

CHUNK_ROWS = 1 << 20


def chunk_starts(rows: int) -> range:
    """The first row of each chunk of ``rows`` rows (``CHUNK_ROWS`` as it is now: tests shrink it)."""
    return range(0, rows, CHUNK_ROWS)
