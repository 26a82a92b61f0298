"""Search terms over event arguments (``arg:``), answered from the dataset's ``events.args``."""

from __future__ import annotations

import pytest

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import search
from kinetoscope.viewer.querying.queries import event_details


def _names(index: ViewerIndex, query: str) -> set[str]:
    found = search.search(index, query, 0, 1000)
    return {hit["name"] for hit in found["hits"]}


def test_an_argument_value_is_searched_with_spaces_and_case_ignored(multirank: ViewerIndex) -> None:
    # GIVEN the generated trace, whose aten::linear ops carry "Input Dims": [[rows, 4096], [4096, 4096]]
    # WHEN the search names that argument and a part of its value, written with spaces
    found = search.search(multirank, 'arg:"Input Dims=[4096, 4096]"', 0, 1000)
    # THEN exactly the events with that value match: aten::linear (aten::addmm has [[rows, 4096]] only)
    assert found["total"] > 0 and {hit["name"] for hit in found["hits"]} == {"aten::linear"}
    details = event_details(multirank, int(found["hits"][0]["id"]))
    assert details is not None and [4096, 4096] in details["args"]["Input Dims"]


def test_an_argument_term_combines_with_other_terms(multirank: ViewerIndex) -> None:
    everything = search.search(multirank, 'arg:"Input Dims"', 0, 1)["total"]
    rank_one = search.search(multirank, 'arg:"Input Dims" rank:1', 0, 1)["total"]
    assert 0 < rank_one < everything
    assert _names(multirank, 'arg:"Input Dims" aten::addmm') == {"aten::addmm"}
    assert search.search(multirank, 'arg:"Input Dims=[12345]"', 0, 1)["total"] == 0
    assert search.search(multirank, "arg:NoSuchArgument", 0, 1)["total"] == 0


@pytest.mark.parametrize(("query", "says"), [("arg:=5", "name the argument"), ("arg:/x/", "regexes work")])
def test_a_malformed_argument_term_says_how_to_write_it(multirank: ViewerIndex, query: str, says: str) -> None:
    with pytest.raises(search.SearchSyntaxError, match=says):
        search.parse(query)
