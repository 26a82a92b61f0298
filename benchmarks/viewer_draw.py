"""How long the timeline takes to draw one full view, and an interaction to settle, in Chromium.

    PYTHONPATH=src python benchmarks/viewer_draw.py [TRACE] [--events 1000000] [--dataset DIR] [--repeats 8]

TRACE defaults to the public V100 trace of HTA's tests (df_index_resolver, 216k events); it is imported
(`kinetoscope import`) into a temporary folder. `--events N` also generates an N-event, 8-rank dataset
(tests/kineto_gen.py, through the real ingest); `--dataset DIR` also measures an ingested dataset. Each
is served by `kinetoscope view` in a process of its own and opened at its full view in headless
Chromium (1500 x 900), then:

- full-view draw: `--repeats` times, two zoom steps in (W W), then Fit: the full view fetched again and
  drawn; its last draw's time is `data-draw-ms` on the timeline, measured around the draw. Goals: 16 ms
  (V100), 33 ms (1 M events);
- interaction settle: `--repeats` times each, W (zoom in), S (zoom out), Ctrl+wheel (one notch, zoom
  in then out), all drawn from the window already fetched, then W W and S S (two steps: drawn from the
  window the page fetched ahead once the view rested, two steps in and out; else fetched), from the
  (last) input event's time stamp to the end of the last draw once the page is idle; the first repaint,
  when the window fetch was sent and how long it took, and how long the windows fetched ahead after the
  move took to be answered (the server's time for such a window). Goal: 100 ms.

Medians and maxima are printed with the load average of the machine (other processes share it).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kinetoscope.viewer.indexing.source import resolve_dataset  # noqa: E402
from tests.viewer.helpers import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

Settles = dict[str, list["Settle"]]  # per interaction, per repeat

V100 = Path("/work/shared/datasets/public-traces/hta/tests/data/df_index_resolver/df_index_resolver.json.gz")
DRAW_GOAL_MS = {"V100": 16.0, "generated": 33.0}
SETTLE_GOAL_MS = 100.0

# Every input event's time stamp and every draw's end (performance.now(), one clock), for the settle times.
RECORDER = """
window.__inputs = []; window.__draws = [];
for (const type of ['keydown', 'wheel']) {
  window.addEventListener(type, (e) => window.__inputs.push(e.timeStamp), { capture: true, passive: true });
}
new MutationObserver((changes) => { for (const c of changes) window.__draws.push(Number(c.target.dataset.drawnAt)); })
  .observe(document, { subtree: true, attributes: true, attributeFilter: ['data-drawn-at'] });
"""


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def settled(page: Any) -> None:
    """Waits until the page is idle (fetches answered and drawn), twice, a frame apart."""
    for _ in range(2):
        page.wait_for_selector("html[data-idle=true]", state="attached", timeout=120_000)
        page.wait_for_timeout(100)


def full_view_draws(page: Any, repeats: int) -> list[float]:
    """Each time: two zoom steps in (W W), then Fit, which fetches the full view; the time of its last draw."""
    times = []
    for _ in range(repeats):
        page.keyboard.press("w")
        page.keyboard.press("w")
        settled(page)
        page.evaluate("() => { delete document.querySelector('.timeline').dataset.drawMs; }")
        page.locator("button", has_text="Fit").click()
        page.wait_for_selector(".timeline[data-draw-ms]", state="attached", timeout=60_000)
        settled(page)
        times.append(float(page.eval_on_selector(".timeline", "el => el.dataset.drawMs")))
    return times


# The window fetches for the view since the input (not those fetched ahead of it, `ahead=1`): when each was
# sent and how long it took (ms).
WINDOW_FETCHES = """([t, ahead]) => performance.getEntriesByType('resource')
  .filter((e) => e.name.includes('/api/window') && e.name.includes('ahead=1') === ahead && e.startTime >= t)
  .map((e) => [e.startTime, e.duration])"""


@dataclass(frozen=True)
class Settle:
    """One interaction, in ms from its (last) input event."""

    first_ms: float  # the first repaint
    last_ms: float  # the last one, once the page is idle
    fetch: tuple[float, float] | None  # the last window fetch: sent at, answered in; None: drawn from the window held
    ahead_ms: tuple[float, ...]  # how long each window fetched ahead after the move took


def settle_time(page: Any, act: Callable[[], None]) -> Settle:
    page.evaluate("() => { window.__inputs = []; window.__draws = []; performance.clearResourceTimings(); }")
    act()
    settled(page)
    inputs, draws = page.evaluate("[window.__inputs, window.__draws]")
    after = [d - inputs[-1] for d in draws if d >= inputs[-1]]
    fetches = page.evaluate(WINDOW_FETCHES, [inputs[-1], False])
    ahead = tuple(took for _, took in page.evaluate(WINDOW_FETCHES, [inputs[-1], True]))
    return Settle(after[0], after[-1], (fetches[-1][0] - inputs[-1], fetches[-1][1]) if fetches else None, ahead)


def wheel(page: Any, delta_y: float) -> Callable[[], None]:
    def act() -> None:
        box = page.locator("canvas.tl-canvas").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
        page.keyboard.down("Control")
        page.mouse.wheel(0, delta_y)
        page.keyboard.up("Control")
    return act


def keys(page: Any, text: str) -> Callable[[], None]:
    def act() -> None:
        for key in text:
            page.keyboard.press(key)
    return act


def interactions(page: Any, repeats: int) -> Settles:
    """Each repeat: one zoom step in and out by key and by wheel (the window held serves them), then two
    steps in and out (W W, S S: each fetches)."""
    acts = {"W": keys(page, "w"), "S": keys(page, "s"), "Ctrl+wheel in": wheel(page, -100),
            "Ctrl+wheel out": wheel(page, 100), "W W": keys(page, "ww"), "S S": keys(page, "ss")}
    out: Settles = {name: [] for name in acts}
    for _ in range(repeats):
        for name, act in acts.items():
            out[name].append(settle_time(page, act))
    return out


def measure(link: str, repeats: int) -> tuple[str, list[float], Settles]:
    """What the header says of the dataset, the full-view draws and the interactions' settle times."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 900})
        page.add_init_script(RECORDER)
        page.goto(link)
        page.wait_for_selector("canvas.tl-canvas", timeout=600_000)  # the index is built first when it is not there
        settled(page)
        about = page.locator("header .meta").inner_text()
        draws = full_view_draws(page, repeats)
        settles = interactions(page, repeats)
        browser.close()
    return about, draws, settles


@contextmanager
def viewer(dataset: Path) -> Iterator[str]:
    """`kinetoscope view DATASET` in a process of its own; its one-time link."""
    proc = subprocess.Popen([sys.executable, "-m", "kinetoscope", "view", str(dataset), "--no-browser", "--port", "0"],
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    try:
        yield next(m.group(1) for line in proc.stdout if (m := re.search(r"(http://\S+)", line)))
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def imported(trace: Path, tmp: Path) -> Path:
    source = tmp / "prof"
    source.mkdir()
    (source / trace.name).symlink_to(trace.resolve())
    out = tmp / "imported"
    subprocess.run([sys.executable, "-m", "kinetoscope", "import", str(source), "--out", str(out)], check=True,
                   capture_output=True)
    return resolve_dataset(out, say=lambda _: None).path


def generated(events: int, tmp: Path) -> Path:
    from tests.kineto_gen import TrainingSpec, write_dataset

    return write_dataset(tmp / "generated", TrainingSpec.for_events(events, problems=False))


def report(title: str, goal_ms: float, draws: list[float], settles: Settles) -> None:
    print(f"{title}: full-view draw over {len(draws)} draws: median {statistics.median(draws):.1f} ms, "
          f"max {max(draws):.1f} ms (goal {goal_ms:.0f} ms); {load()}")
    print("  draws (ms): " + " ".join(f"{t:.1f}" for t in draws))
    for name, rows in settles.items():
        last = [r.last_ms for r in rows]
        fetched = [r.fetch for r in rows if r.fetch]
        sent, took = (statistics.median(f[k] for f in fetched) for k in (0, 1)) if fetched else (0.0, 0.0)
        how = (f"fetched {len(fetched)} of {len(rows)} times, sent at {sent:.0f} ms and answered in {took:.0f} ms"
               if fetched else "never fetched")
        ahead = [ms for r in rows for ms in r.ahead_ms]
        if ahead:
            how += f"; {len(ahead)} windows fetched ahead, answered in median {statistics.median(ahead):.0f} ms"
        print(f"  {name}: settles in median {statistics.median(last):.0f} ms, max {max(last):.0f} ms "
              f"(goal {SETTLE_GOAL_MS:.0f} ms); first repaint {statistics.median(r.first_ms for r in rows):.0f} ms; "
              f"{how}; {load()}")


def run(title: str, dataset: Path, goal_ms: float, repeats: int) -> None:
    with viewer(dataset) as link:
        about, draws, settles = measure(link, repeats)
    report(f"{title} ({about})", goal_ms, draws, settles)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", nargs="?", type=Path, default=V100)
    parser.add_argument("--events", type=int, default=0, help="also a generated dataset of about this many events")
    parser.add_argument("--dataset", type=Path, help="also this ingested dataset (the generated one of an earlier run)")
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args.trace.name, imported(args.trace, Path(tmp)), DRAW_GOAL_MS["V100"], args.repeats)
        if args.events:
            run("generated", generated(args.events, Path(tmp)), DRAW_GOAL_MS["generated"], args.repeats)
    if args.dataset:
        run(args.dataset.name, args.dataset, DRAW_GOAL_MS["generated"], args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
