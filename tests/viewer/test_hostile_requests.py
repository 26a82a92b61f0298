"""Requests an attacker (or a mistyped URL) can send the viewer: each is answered with a clear
4xx, never a 500, and never runs or returns more than the limits allow."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kinetoscope.viewer.index import ViewerIndex

from .helpers import running_server
from .test_api import fetch

HOSTILE_NUMBERS = ["1e400", "-1e400", "inf", "nan", "abc", "99999999999999999999999", "-9223372036854775809",
                   str(2**53 + 1), "0x10", "1,1e400"]
NUMERIC_PARAMS = {
    "/api/window": ["start", "end", "px", "tracks"],
    "/api/counters": ["start", "end", "px", "ids"],
    "/api/range": ["start", "end", "tracks"],
    "/api/op_at": ["rank", "ts"],
    "/api/stack": ["rank", "stack_id"],
    "/api/memory/allocations": ["rank", "device"],
}
GOOD = {"start": "0", "end": "1000", "px": "100", "rank": "0", "ts": "0", "stack_id": "0", "device": "0",
        "tracks": "0", "ids": "0"}


@pytest.fixture(scope="module")
def base(multirank: ViewerIndex) -> Iterator[str]:
    with running_server(multirank) as url:
        yield url


@pytest.mark.parametrize("path", NUMERIC_PARAMS)
def test_out_of_range_or_non_numeric_parameters_are_a_400_with_the_name(base: str, path: str) -> None:
    for name in NUMERIC_PARAMS[path]:
        for value in HOSTILE_NUMBERS:
            query = "&".join(f"{k}={value if k == name else GOOD[k]}" for k in NUMERIC_PARAMS[path])
            status, body, _ = fetch(f"{base}{path}?{query}")
            assert status == 400, (path, name, value, body)
            assert name in json.loads(body)["error"]
