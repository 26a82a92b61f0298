"""Time from `kinetoscope view TRACE` to the first page and to the first timeline data.

Writes a synthetic torch.profiler trace of --mb megabytes (`trace_gen.py`) under /tmp, starts
`kinetoscope view` on it and polls: when the URL is printed, when ``/`` answers, each stage of
``/api/progress``, when the preview of the trace's first events (``viewer.pages.preview``) answers its
first ``/api/window``, when the whole is ready and when the whole's first ``/api/window``
answers. Before the page was served during preparation, the first page came only at "ready".
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from trace_gen import write_trace

ROOT = Path(__file__).resolve().parents[1]


def fetch(url: str, session: str = "", data: bytes | None = None) -> Any:
    request = urllib.request.Request(url, data=data, headers={"X-Kinetoscope-Session": session} if session else {})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read()) if "json" in response.headers.get("content-type", "") else response.read()


def sign_in(base: str, code: str) -> str:
    """The session a page gets for the printed link's one-time code."""
    return str(fetch(base + "api/session", data=json.dumps({"code": code}).encode())["session"])


def first_window(base: str, session: str) -> None:
    """What the page asks first: the run's tracks, then a window over all of them."""
    meta = fetch(base + "api/meta", session)
    tracks = ",".join(str(t["id"]) for t in meta["tracks"])
    fetch(base + f"api/window?start=0&end={meta['span_ns']}&px=1500&tracks={tracks}", session)


def measure(trace: Path, preview_mb: float, until_preview: bool = False) -> dict[str, float]:
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kinetoscope", "view", str(trace), "--no-browser", "--port", "0",
                             "--preview-mb", str(preview_mb)],
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    try:
        url = next(m.group(1) for line in proc.stdout if (m := re.search(r"(http://\S+)", line)))
        times = {"url printed": time.monotonic() - started}
        base, code = url.split("?code=")
        fetch(url)
        token = sign_in(base, code)
        times["first page"] = time.monotonic() - started
        while (state := fetch(base + "api/progress", token))["stage"] != "ready":
            if state["error"]:
                raise SystemExit(f"preparing failed: {state['error']}")
            times.setdefault(f"stage {state['stage']}", time.monotonic() - started)
            if state["preview"] and "preview timeline data" not in times:
                first_window(base, token)
                times["preview timeline data"] = time.monotonic() - started
                events = state["preview"]["events"]
                if until_preview:
                    print(f"  (the preview held {events:,} events)")
                    return times
            time.sleep(0.1)
        times["ready"] = time.monotonic() - started
        first_window(base, token)
        times["first timeline data"] = time.monotonic() - started
        if "preview timeline data" in times:
            print(f"  (the preview held {events:,} events)")
        return times
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=1000, help="size of the generated trace (default 1000)")
    parser.add_argument("--preview-mb", type=float, default=10, help="view's --preview-mb (default 10; 0: none)")
    parser.add_argument("--until-preview", action="store_true",
                        help="stop at the preview's first window (the whole of a 1 GB trace takes minutes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kinetoscope-view-") as tmp:
        trace = Path(tmp) / "rank0.pt.trace.json"
        events = write_trace(trace, int(args.mb * 1e6))
        print(f"{trace.stat().st_size / 1e6:.0f} MB, {events:,} events")
        for name, seconds in measure(trace, args.preview_mb, args.until_preview).items():
            print(f"  {name:<22} {seconds:7.2f} s")


if __name__ == "__main__":
    main()
