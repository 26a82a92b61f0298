"""Time from `kinetoscope view TRACE` to the first page and to the first timeline data.

Writes a synthetic torch.profiler trace of --mb megabytes (`trace_gen.py`) under /tmp, starts
`kinetoscope view` on it and polls: when the URL is printed, when ``/`` answers, each stage of
``/api/progress``, when ``/api/meta`` answers and when the first ``/api/window`` of the whole
trace answers. Before the page was served during preparation, the first page came only at
"ready".
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


def fetch(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=600) as response:
        return json.loads(response.read()) if "json" in response.headers.get("content-type", "") else response.read()


def measure(trace: Path) -> dict[str, float]:
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kinetoscope", "view", str(trace), "--no-browser", "--port", "0"],
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    try:
        url = next(m.group(1) for line in proc.stdout if (m := re.search(r"(http://\S+)", line)))
        times = {"url printed": time.monotonic() - started}
        base, token = url.split("?token=")
        fetch(url)
        times["first page"] = time.monotonic() - started
        while (state := fetch(base + f"api/progress?token={token}"))["stage"] != "ready":
            if state["error"]:
                raise SystemExit(f"preparing failed: {state['error']}")
            times.setdefault(f"stage {state['stage']}", time.monotonic() - started)
            time.sleep(0.1)
        times["ready"] = time.monotonic() - started
        meta = fetch(base + f"api/meta?token={token}")
        tracks = ",".join(str(t["id"]) for t in meta["tracks"])
        fetch(base + f"api/window?token={token}&start=0&end={meta['span_ns']}&px=1500&tracks={tracks}")
        times["first timeline data"] = time.monotonic() - started
        return times
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=1000, help="size of the generated trace (default 1000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kinetoscope-view-") as tmp:
        trace = Path(tmp) / "rank0.pt.trace.json"
        events = write_trace(trace, int(args.mb * 1e6))
        print(f"{trace.stat().st_size / 1e6:.0f} MB, {events:,} events")
        for name, seconds in measure(trace).items():
            print(f"  {name:<22} {seconds:7.2f} s")


if __name__ == "__main__":
    main()
