"""Fixtures: small datasets ingested from generated Kineto traces (built once per test session) and their
indexes; for the browser tests, one headless Chromium for the whole session, a fresh page per test and a
server of the four-rank dataset per module."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..conftest import PYTHON, python_env
from ..kineto_gen import TrainingSpec, write_dataset
from .helpers import CHROMIUM, CHROMIUM_ARGS, running_server


@pytest.fixture(scope="session")
def multirank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four ranks, a hostile op name, a dropped-events warning and a truncated file."""
    out = tmp_path_factory.mktemp("multirank") / "ds"
    return write_dataset(out, TrainingSpec(ranks=4, steps=3, layers=6, hostile=True, problems=True))


@pytest.fixture(scope="session")
def multirank(multirank_dir: Path) -> ViewerIndex:
    return ViewerIndex.open(Dataset(multirank_dir))


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Chromium, started once for every browser test of the session.

    Playwright's sync API marks its event loop as running in this thread while it is open, so a test
    that runs after a browser test must not call ``asyncio.run`` in the main thread (run it in a
    thread of its own, as ``test_index_progress.Client`` does)."""
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page of its own for each test; a page error, a dialog or a console error fails the test."""
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(8_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # a rejected SQL query is an expected 400; any other console error fails the test
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" and "status of 400" not in m.text else None)
    pg.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
    yield pg
    context.close()
    assert errors == []


@pytest.fixture(scope="module")
def server(multirank: ViewerIndex) -> Iterator[str]:
    """The viewer of the four-rank dataset on a free local port; its base URL."""
    with running_server(multirank) as url:
        yield url


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real torch.profiler capture (the built-in demo), ingested."""
    out = tmp_path_factory.mktemp("captured")
    subprocess.run([PYTHON, "-m", "kinetoscope", "demo", "--out", str(out), "--steps", "2"], env=python_env(),
                   check=True, capture_output=True, timeout=240)
    from kinetoscope.viewer.indexing.source import resolve_dataset

    return resolve_dataset(out, say=lambda _: None).path
