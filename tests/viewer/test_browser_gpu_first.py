"""The GPU first: on a trace recorded with deep Python stacks the device streams and each device's busy
row are on the first screen, the Python frames folded until one click unfolds them (Chromium)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..kineto_gen import TrainingSpec, write_dataset
from .helpers import running_server
from .test_browser import api, idle, open_view, shot

pytestmark = pytest.mark.slow
VIEW_H = 900  # the page fixture's viewport height


@pytest.fixture(scope="module")
def deep_stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two ranks whose main thread has 30 lanes of Python frames around each step."""
    out: Path = tmp_path_factory.mktemp("deep") / "ds"
    write_dataset(out, TrainingSpec(ranks=2, steps=2, layers=2, problems=False, python_depth=30))
    with running_server(ViewerIndex.open(Dataset(out))) as url:
        yield url


def _on_screen(box: dict[str, float] | None) -> bool:
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEW_H


def test_device_stream_and_busy_row_on_the_first_screen(page: Any, deep_stacks: str) -> None:
    open_view(page, deep_stacks + "/")
    shot(page, "gpu-first")
    stream = page.locator(".label.slice").filter(has_text="stream").first
    assert _on_screen(stream.bounding_box())
    busy = page.locator(".label.busy").first
    assert "device 0 · busy %" in busy.inner_text()
    assert _on_screen(busy.bounding_box())


def test_python_frames_fold_by_default_and_unfold_in_one_click(page: Any, deep_stacks: str) -> None:
    open_view(page, deep_stacks + "/")
    thread = page.locator(".label.slice").filter(has_text="(python3)").first
    folded = thread.bounding_box()["height"]
    button = thread.locator("button.python-fold")
    assert "Python lanes" in button.inner_text()
    button.click()
    idle(page)
    thread = page.locator(".label.slice").filter(has_text="(python3)").first
    assert thread.bounding_box()["height"] > folded + 30 * 18 - 1
    assert "pyopen=" in page.url


def test_a_kernel_of_a_trace_with_stacks_does_not_ask_for_with_stack(page: Any, deep_stacks: str) -> None:
    kernel = api(deep_stacks, "/api/search?q=cat%3Akernel")["hits"][0]
    open_view(page, f"{deep_stacks}/?sel={kernel['id']}")
    page.locator('.side-tabs button[data-tab="details"]').click()
    details = page.locator('[data-panel="details"]').inner_text()
    assert "no Python stack of its own" in details and "with_stack=True" not in details
