"""Memory bounds: the peak resident memory of the whole process tree (workers included) of
ingest, summary and view on a trace of many tiny events.

Generates one trace of N tiny events (about 78 bytes each: host slices, with a kernel and a
runtime launch every tenth event), imports it as a light session, then runs in fresh processes:
``kinetoscope ingest`` into a dataset, ``kinetoscope summary`` of that dataset, and
``kinetoscope view`` of it until its index is ready and a first timeline window is answered.
Each process tree is sampled every 10 ms. The goal is 1.5 GB for 10 M events.

Usage: python benchmarks/memory_bounds.py [--events 1000000 10000000] [--repeats 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
from _common import Measured, measured_process, tree_rss

GOAL_BYTES = 1500 * 10**6
KINETOSCOPE = [sys.executable, "-m", "kinetoscope"]


def write_tiny_trace(path: Path, events: int) -> None:
    """``events`` tiny events: host ops on 4 threads, every tenth a launch with its kernel."""
    head = {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "baseTimeNanoseconds": 1_700_000_000_000_000_000}
    with open(path, "w") as out:
        out.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        lines = []
        for i in range(events):
            ts = 1000 + i
            if i % 10 == 8:
                line = f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts},"dur":1,"args":{{"correlation":{i}}}}}'
            elif i % 10 == 9:
                line = f'{{"ph":"X","cat":"kernel","name":"k{i % 7}","pid":0,"tid":7,"ts":{ts},"dur":1,"args":{{"correlation":{i - 1},"device":0,"stream":7}}}}'
            else:
                line = f'{{"ph":"X","cat":"cpu_op","name":"op{i % 13}","pid":1,"tid":{1 + i % 4},"ts":{ts},"dur":1}}'
            lines.append(line)
            if len(lines) == 100_000:
                out.write(",\n".join(lines) + ",\n")
                lines = []
        out.write(",\n".join(lines or ['{"ph":"i","name":"end","pid":1,"tid":1,"ts":0,"s":"t"}']) + '\n], "traceName": "tiny"}\n')


def view_peak(dataset: Path, env: dict[str, str]) -> Measured:
    """``kinetoscope view`` until its index is ready and a first timeline window is answered."""
    started = time.perf_counter()
    argv = [*KINETOSCOPE, "view", str(dataset), "--no-browser", "--port", "0"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    process, peak, url = psutil.Process(child.pid), 0, None
    assert child.stdout is not None
    os.set_blocking(child.stdout.fileno(), False)
    text = ""
    while child.poll() is None:
        peak = max(peak, tree_rss(process))
        text += child.stdout.read() or ""
        found = re.search(r"(http://\S+?)/?\?token=(\S+)", text)
        if found and "ready" in text and url is None:
            url = found.group(0)
            break
        time.sleep(0.01)
    if url is not None:
        base, token = url.split("?token=")
        request = urllib.request.Request(f"{base.rstrip('/')}/api/window?px=1200", headers={"Cookie": ""})
        request.full_url += f"&token={token}"
        sampling = True
        try:
            with urllib.request.urlopen(request, timeout=600) as answer:
                answer.read()
        except OSError as exc:
            text += f"\nwindow request: {exc}"
        sampling = sampling and False
        peak = max(peak, tree_rss(process))
        child.send_signal(signal.SIGINT)
    child.wait(timeout=60)
    return Measured(time.perf_counter() - started, 0.0, peak, child.returncode or 0, text[-2000:])


def measure(events: int, work: Path, env: dict[str, str]) -> dict[str, Measured]:
    trace = work / f"tiny-{events}.json"
    write_tiny_trace(trace, events)
    profile, dataset = work / f"profile-{events}", work / f"dataset-{events}"
    done = subprocess.run([*KINETOSCOPE, "import", str(trace), "--out", str(profile), "--no-pb"], env=env, capture_output=True, check=False)
    if done.returncode:
        raise SystemExit(done.stderr.decode())
    return {
        "ingest": measured_process([*KINETOSCOPE, "ingest", str(profile), "--out", str(dataset), "--quiet"], env),
        "summary": measured_process([*KINETOSCOPE, "summary", str(dataset)], env),
        "view": view_peak(dataset, env),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    env = dict(os.environ)
    for events in args.events:
        for repeat in range(args.repeats):
            with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
                work = args.keep or Path(tmp)
                work.mkdir(parents=True, exist_ok=True)
                results = measure(events, work, env)
                size_mb = (work / f"tiny-{events}.json").stat().st_size / 1e6
            for stage, result in results.items():
                verdict = "ok" if result.peak_bytes <= GOAL_BYTES else "OVER 1.5 GB"
                failed = f" (exit {result.returncode}: {result.stderr.strip()[-300:]})" if result.returncode else ""
                print(
                    f"{events:>10,} events ({size_mb:5.0f} MB) #{repeat + 1} {stage:8s} "
                    f"peak {result.peak_bytes / 1e6:6.0f} MB  wall {result.wall_s:6.1f} s  {verdict}{failed}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
