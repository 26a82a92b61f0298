"""Memory bounds: the peak resident memory of the whole process tree (workers included) of
ingest, summary and view on a trace of many tiny events.

Generates one trace of N tiny events (about 78 bytes each: host slices, with a kernel and a
runtime launch every tenth event), imports it as a light session, then runs in fresh processes:
``kinetoscope ingest`` into a dataset, ``kinetoscope summary`` of that dataset, and
``kinetoscope view`` of it until its index is ready and a first timeline window is answered.
Each process tree is sampled every 10 ms. The goal is 1.5 GB for 10 M events.

Usage: python benchmarks/memory_bounds.py [--events 1000000 10000000] [--repeats 1] [--keep DIR] [--summary-only]

``--summary-only`` (with ``--keep``) measures only ``kinetoscope summary`` of the dataset an
earlier run kept there (where there is none, the whole benchmark runs and keeps one): a summary of
10 M events takes under a minute, the whole benchmark about five.
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
import threading
import time
import urllib.request
from pathlib import Path

import psutil
from _common import Measured, measured_process, tree_rss

GOAL_BYTES = 1500 * 10**6
KINETOSCOPE = [sys.executable, "-m", "kinetoscope"]


HEAD = {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "baseTimeNanoseconds": 17 * 10**17}
LAUNCH = (
    '{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":1,"args":{"correlation":%d}}'
)
KERNEL = (
    '{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d,"dur":1,'
    '"args":{"correlation":%d,"device":0,"stream":7}}'
)
OP = '{"ph":"X","cat":"cpu_op","name":"op%d","pid":1,"tid":%d,"ts":%d,"dur":1}'


def _event(i: int) -> str:
    ts = 1000 + i
    if i % 10 == 8:
        return LAUNCH % (ts, i)
    if i % 10 == 9:
        return KERNEL % (i % 7, ts, i - 1)
    return OP % (i % 13, 1 + i % 4, ts)


def write_tiny_trace(path: Path, events: int) -> None:
    """``events`` tiny events: host ops on 4 threads, every tenth a launch with its kernel."""
    with open(path, "w") as out:
        out.write(json.dumps(HEAD)[:-1] + ', "traceEvents": [\n')
        for start in range(0, events, 100_000):
            lines = [_event(i) for i in range(start, min(events, start + 100_000))]
            out.write(",\n".join(lines) + (",\n" if start + 100_000 < events else "\n"))
        out.write('], "traceName": "tiny"}\n')


class _TreeSampler(threading.Thread):
    """The peak resident memory of a process tree, sampled every 10 ms until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process, self.peak, self.running = psutil.Process(pid), 0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, tree_rss(self.process))
            time.sleep(0.01)


def _get(url: str, session: str = "", data: bytes | None = None) -> bytes:
    request = urllib.request.Request(url, data=data, headers={"X-Kinetoscope-Session": session} if session else {})
    with urllib.request.urlopen(request, timeout=1200) as answer:
        return bytes(answer.read())


def view_peak(dataset: Path, env: dict[str, str]) -> Measured:
    """``kinetoscope view`` until its index is ready and a first timeline window is answered."""
    started = time.perf_counter()
    argv = [*KINETOSCOPE, "view", str(dataset), "--no-browser", "--port", "0"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    sampler = _TreeSampler(child.pid)
    sampler.start()
    said, error = [], ""
    try:
        assert child.stdout is not None
        for line in child.stdout:
            said.append(line)
            found = re.search(r"(http://\S+/)\?code=([\w-]+)", line)
            if found:
                base, code = found.groups()
                break
        else:
            raise RuntimeError("view printed no URL")
        session = json.loads(_get(f"{base}api/session", data=json.dumps({"code": code}).encode()))["session"]
        while not json.loads(_get(f"{base}api/progress", session))["ready"]:
            time.sleep(0.1)
        meta = json.loads(_get(f"{base}api/meta", session))
        _get(f"{base}api/window?start=0&end={int(meta['span_ns'])}&px=1600", session)
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        error = f"{exc}; {''.join(said)[-500:]}"
    finally:
        sampler.running = False
        sampler.join()
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
    return Measured(time.perf_counter() - started, 0.0, sampler.peak, 1 if error else 0, error)


def measure(events: int, work: Path, env: dict[str, str], summary_only: bool = False) -> dict[str, Measured]:
    trace = work / f"tiny-{events}.json"
    dataset = work / f"dataset-{events}"
    if summary_only and (dataset / "_dataset.json").exists() and trace.exists():
        return {"summary": measured_process([*KINETOSCOPE, "summary", str(dataset)], env)}
    write_tiny_trace(trace, events)
    profile = work / f"profile-{events}"
    importing = [*KINETOSCOPE, "import", str(trace), "--out", str(profile), "--no-pb"]
    done = subprocess.run(importing, env=env, capture_output=True, check=False)
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
    parser.add_argument("--summary-only", action="store_true", help="only summary, of the dataset --keep holds")
    args = parser.parse_args()
    if args.summary_only and args.keep is None:
        parser.error("--summary-only reads the dataset --keep holds: give --keep")
    env = dict(os.environ)
    for events in args.events:
        for repeat in range(args.repeats):
            with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
                work = args.keep or Path(tmp)
                work.mkdir(parents=True, exist_ok=True)
                results = measure(events, work, env, args.summary_only)
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
