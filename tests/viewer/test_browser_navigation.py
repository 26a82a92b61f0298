"""Navigation keys: `.` / `,` along a track's lane, `]` / `[` along the flows, driven in Chromium
(screenshots in artifacts/viewer/)."""

from __future__ import annotations

from typing import Any

import pytest

from .test_browser import api, click_event, idle, open_view, shot

pytestmark = pytest.mark.slow


def _selected(page: Any) -> str:
    return page.locator('[data-panel="details"] .event-name').inner_text()


def _press(page: Any, key: str) -> None:
    page.keyboard.press(key)
    idle(page)


def test_keys_step_along_the_lane_and_hop_along_the_flows(page: Any, server: str) -> None:
    # GIVEN an aten::addmm selected
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][1]
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}")
    click_event(page, hit)
    assert _selected(page) == "aten::addmm"
    # WHEN ] is pressed THEN the runtime call it made is selected, with the Dependencies tab open
    made = [e for e in api(server, f"/api/flows/{hit['id']}")["downstream"] if e["hop"] == 1]
    launch = made[0]  # the server lists the calls that launched device work first
    _press(page, "]")
    assert page.locator('.side-tabs button.active').get_attribute("data-tab") == "dependencies"
    assert "sm90_xmma_gemm" in page.locator('[data-panel="dependencies"]').inner_text()
    assert f"sel={launch['id']}" in page.url
    # AND ] again reaches the kernel it launched, [ goes back to the launch, [ again to the op
    kernel = next(e for e in api(server, f"/api/flows/{launch['id']}")["downstream"] if e["layer"] == "device")
    _press(page, "]")
    assert f"sel={kernel['id']}" in page.url
    shot(page, "flow-hop-kernel")  # the runtime -> device arrow carries its launch latency
    _press(page, "[")
    assert f"sel={launch['id']}" in page.url
    _press(page, "[")
    assert f"sel={hit['id']}" in page.url
    # WHEN . is pressed THEN the next slice on the op's track and lane is selected, and , comes back
    following = api(server, f"/api/neighbour/{hit['id']}?dir=next")
    assert following["track"] == hit["track"] and following["lane"] == hit["lane"] and following["ts"] > hit["ts"]
    page.click('[data-tab="details"]')
    _press(page, ".")
    assert f"sel={following['id']}" in page.url and _selected(page) == following["name"]
    _press(page, ",")
    assert f"sel={hit['id']}" in page.url
    shot(page, "next-previous-slice")
    # AND the key list (?) names every one of these keys
    page.keyboard.press("?")
    keys = page.locator(".help[role=dialog] tbody").inner_text()
    assert all(k in keys for k in (". ,", "] [", "Shift+drag", "flamegraph", "hover a track name"))
