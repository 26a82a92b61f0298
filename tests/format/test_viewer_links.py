"""The viewer's deep link query, spelled once for findings and ``kinetoscope view``."""

from __future__ import annotations

from kinetoscope.format.viewer_links import timeline_query


def test_a_time_range_and_an_event_open_the_timeline_there() -> None:
    assert timeline_query((10, 20), 7) == "page=timeline&start=10&end=20&sel=7"
    assert timeline_query(None, 7) == "page=timeline&sel=7"
    assert timeline_query((10, 20), None) == "page=timeline&start=10&end=20"
    assert timeline_query(None, None) == ""


def test_findings_and_the_view_command_write_the_same_link() -> None:
    from kinetoscope.cli.view import place_query
    from kinetoscope.findings.ranks import view_window, viewer_link

    window = view_window(1_000, 50_000, 90_000)
    assert viewer_link(1_000, 50_000, 90_000, 42) == "?" + place_query(window, 42)
