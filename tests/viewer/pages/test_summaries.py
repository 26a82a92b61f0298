"""The Summary and Findings pages take the analyses' settings of the command that serves them
(``--categories``'s environment variable for ``kinetoscope view``), whichever thread asks."""

from __future__ import annotations

import concurrent.futures as cf
from typing import Any

from kinetoscope.analysis.settings.user_options import UserOptions, using
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.pages import summaries
from kinetoscope.viewer.serving.app import Api


def _categories(page: dict[str, Any]) -> set[str]:
    (section,) = [a for a in page["analyses"] if a["name"] == "time_by_category"]
    return {row["category"] for row in section["rows"]}


def test_the_pages_use_the_settings_the_api_was_made_with(multirank: ViewerIndex) -> None:
    summaries.forget_made()
    try:
        # GIVEN an Api made where the command's settings put every op in a category of the user's
        with using(UserOptions(categories=(("all of mine", (".",)),))):
            api = Api(multirank)
        # WHEN a request thread, which starts without them, asks for the Summary page
        with cf.ThreadPoolExecutor(1) as pool:
            page = pool.submit(api.summary).result()
        # THEN the page is made with them
        assert "all of mine" in _categories(page)
    finally:
        summaries.forget_made()
