"""The harness's path language and tolerance, on a small document."""

from __future__ import annotations

import pytest

from tests.truth.harness import Between, Near, OneOf, matches, resolve

DOCS = {
    "summary": {"analyses": {"stragglers": {"rows": [{"rank": 0, "straggler": False, "ns": 10},
                                                      {"rank": 1, "straggler": True, "ns": 30}]}}},
    "findings": {"findings": [{"rule": "a"}, {"rule": "b"}, {"rule": "a"}]},
    "verify": {"status": "ok", "findings": []},
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("summary:stragglers[rank=1].ns", 30),
        ("summary:analyses.stragglers.rows.0.ns", 10),
        ("summary:stragglers[straggler=true].rank", 1),
        ("summary:stragglers.max(ns)", 30),
        ("summary:stragglers.sum(ns)", 40),
        ("summary:stragglers{straggler=false}.#", 1),
        ("summary:stragglers.values(rank)", [0, 1]),
        ("findings:findings.count(rule=a)", 2),
        ("verify:findings.#", 0),
        ("verify:status", "ok"),
    ],
)
def test_a_path_names_one_value(path: str, value: object) -> None:
    assert resolve(DOCS, path) == value


@pytest.mark.parametrize("path", ["summary:stragglers[rank=2].ns", "summary:stragglers{}.max(x)", "nowhere:x",
                                  "summary:stragglers[straggler=false,rank=1]"])
def test_a_path_that_names_nothing_is_an_error(path: str) -> None:
    with pytest.raises(LookupError):
        resolve(DOCS, path)


def test_tolerance() -> None:
    assert matches(3, 3) and matches(3, 3.0) and not matches(3, 4) and not matches(3, True)
    assert matches(41.666, 41.67) and not matches(41.66, 41.67)
    assert matches(Near(100, abs_=5), 104) and not matches(Near(100, rel=0.01), 102)
    assert matches(Between(None, 200_000), 150_000) and not matches(Between(0, 10), 11)
    assert matches(OneOf("a", 2), 2) and not matches("1", 1)
