"""Row chunks: the first row of each chunk, with the chunk size as it is when asked."""

from __future__ import annotations

import pytest

from kinetoscope.analysis._tables import chunks


def test_chunk_starts_cover_every_row_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 4)
    assert list(chunks.chunk_starts(10)) == [0, 4, 8]
    assert list(chunks.chunk_starts(8)) == [0, 4]
    assert list(chunks.chunk_starts(0)) == []
