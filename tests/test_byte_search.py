"""A byte string found in a buffer as ``bytes.find`` finds it, through the C library's ``memmem``."""

from __future__ import annotations

import random

from kinetoscope import _byte_search


def test_find_is_bytes_find_at_every_start() -> None:
    # GIVEN buffers of few letters (so that values recur and overlap) and values of one to 14 bytes
    rng = random.Random(7)
    for _ in range(200):
        data = bytes(rng.choice(b'ab"T') for _ in range(rng.randint(0, 300)))
        needle = bytes(rng.choice(b'ab"T') for _ in range(rng.randint(1, 14)))
        # THEN every start, before, inside and past the buffer, finds what bytes.find finds
        for start in (-5, -1, *range(0, len(data) + 3)):
            assert _byte_search.find(data, needle, start) == data.find(needle, start), (data, needle, start)


def test_find_reads_the_buffer_where_it_lies() -> None:
    # GIVEN a value at the very end of a large buffer, and one that is not in it
    data = b"x" * (1 << 20) + b'"Trace"'
    # THEN it is found there, and the other is not
    assert _byte_search.find(data, b'"Trace"') == 1 << 20
    assert _byte_search.find(data, b'"Trace"', (1 << 20) + 1) == -1
    assert _byte_search.find(data, b'"process_name"') == -1
    assert _byte_search.find(b"", b"x") == -1
