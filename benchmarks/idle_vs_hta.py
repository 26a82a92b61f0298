"""Idle time per stream against Holistic Trace Analysis's ``get_idle_time_breakdown``, side by side.

For each public GPU trace, HTA loads it (``TraceAnalysis(..., include_last_profiler_step=True)``)
and reports, per stream, host wait, kernel wait and other idle time (µs). kinetoscope imports and
ingests the same trace and prints, per stream:

* ``hta rule``: HTA's own rule applied to kinetoscope's gaps: the whole gap is host wait when the
  next op's launch call starts after the gap began, else kernel wait when it is shorter than
  ``consecutive_kernel_delay`` (30 µs), else other. It should equal HTA's columns (to the
  microsecond HTA rounds timestamps to): it checks the gaps themselves;
* ``queue length max``: HTA's ``get_queue_length_summary`` maximum against ``queue_lengths``'
  ``max_waiting`` (launched, not started: HTA's definition);
* ``ours``: kinetoscope's ``idle_time`` split, where a gap is divided at the launch call's start
  (host wait before it, launch latency after it, capped at 30 µs, the rest other) and the time the
  host sat in a synchronising call is sync. ``host + latency + sync + other`` equals HTA's total.

HTA keeps, when a trace has several ``ProfilerStep`` names, only the device work launched before
the last step ends; the same window is applied here (``hta_truth.hta_window``).

  PYTHONPATH=src /tmp/htavenv/bin/python benchmarks/idle_vs_hta.py
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hta_truth import PUBLIC, hta_window

DELAY_US = 30
TRACES = {
    "alexnet": "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "cuda_event_sync": "hta/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "event_sync_multi_stream": "hta/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "dlrm worker0": "param/et_replay/tests/inputs/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json",
    "resnet rtx2080": "param/et_replay/tests/inputs/resnet_kineto.json.gz",
    "tb_plugin resnet50": "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "nccl_parser_config": "hta/tests/data/nccl_parser_config/nccl_data.json.gz",
    "gpu_user_annotation": "hta/tests/data/with_gpu_user_annotation/step_based_trace_2543932.json.gz",
}
HTA_CATEGORIES = ("host_wait", "kernel_wait", "other")


def run_hta(trace_dir: Path) -> tuple[dict[int, dict[str, float]], bool]:
    """stream -> HTA category -> idle µs (and ``queue_max``, its queue length's maximum), and
    whether HTA cut to the last step."""
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=str(trace_dir), include_last_profiler_step=True)
    rank = next(iter(analysis.t.traces))
    found, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False, consecutive_kernel_delay=DELAY_US)
    out: dict[int, dict[str, float]] = {}
    for row in found.to_dict("records"):
        out.setdefault(int(row["stream"]), {})[str(row["idle_category"])] = float(row["idle_time"])
    queues = analysis.get_queue_length_summary(ranks=[rank])
    for (_, stream), row in [] if queues is None else queues.iterrows():
        out.setdefault(int(stream), {})["queue_max"] = float(row[("queue_length", "max")])
    steps = {name for name in analysis.t.symbol_table.get_sym_id_map() if "ProfilerStep" in name}
    return out, len(steps) > 1


def run_ours(trace: Path, work: Path, windowed: bool) -> dict[int, dict[str, float]]:
    """stream -> {HTA's rule on our gaps, our categories} in µs."""
    from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns
    from kinetoscope.analysis.device import gaps
    from kinetoscope.analysis.tables import per_rank
    from kinetoscope.importer.trace_import import ImportOptions, import_trace
    from kinetoscope.ingest import IngestOptions, ingest
    from kinetoscope.report.opening import open_dataset

    copy = work / trace.name
    shutil.copy(trace, copy)
    import_trace(copy, ImportOptions(out_dir=work / "prof"))
    ingest(IngestOptions(profile_dir=work / "prof", out=work / "ds"))
    with open_dataset(work / "ds") as dataset:
        events = dataset.load(needed_columns((ANALYSES_BY_NAME["idle_time"],)))["events"]
        flows = dataset.table("flows")
    if windowed:
        events = hta_window(events, flows)
    out: dict[int, dict[str, float]] = {}
    queues = ANALYSES_BY_NAME["queue_lengths"]({"events": events}).to_pylist()
    for _, rank_events in per_rank(events):
        device_work = gaps.rank_work(rank_events)
        for line in gaps.timelines(device_work, gaps.blocked(rank_events), DELAY_US * 1000):
            if line.stream != -1:
                out[line.stream] = _figures(line, device_work)
    for row in queues:
        out.setdefault(row["stream"], {})["queue_max"] = float(row["max_waiting"])
    return out


def _figures(line: Any, device_work: Any) -> dict[str, float]:
    size = line.gap_ns
    launch = device_work.launch_ts_ns[line.next_row]
    host = (launch >= 0) & (launch > line.gap_start_ns)
    kernel = ~host & (size < DELAY_US * 1000)
    found = {
        "rule host_wait": size[host].sum() / 1000,
        "rule kernel_wait": size[kernel].sum() / 1000,
        "rule other": size[~host & ~kernel].sum() / 1000,
    }
    found.update({f"ours {name}": float(part.sum()) / 1000 for name, part in line.split_ns.items()})
    return found


def check(name: str, path: str) -> None:
    trace = PUBLIC / path
    work = Path(tempfile.mkdtemp(prefix="kinetoscope-idle-"))
    try:
        (work / "hta").mkdir()
        (work / "hta" / trace.name).symlink_to(trace)
        try:
            hta, windowed = run_hta(work / "hta")
        except Exception as exc:  # noqa: BLE001 - report HTA's own failures and go on
            print(f"{name}: HTA could not analyse it ({type(exc).__name__}: {exc}); skipped")
            return
        ours = run_ours(trace, work, windowed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{name}{' (HTA step window applied)' if windowed else ''}, idle µs per stream")
    print(
        f"  {'stream':>6}  {'':5} {'host_wait':>12} {'kernel_wait':>12} {'other':>12} | ours: "
        f"{'host_wait':>12} {'latency':>10} {'sync':>10} {'other':>12}"
    )
    for stream in sorted(set(hta) | set(ours)):
        theirs, mine = hta.get(stream, {}), ours.get(stream, {})
        hta_cols = " ".join(f"{theirs.get(c, 0.0):12,.0f}" for c in HTA_CATEGORIES)
        rule_cols = " ".join(f"{mine.get(f'rule {c}', 0.0):12,.0f}" for c in HTA_CATEGORIES)
        our_cols = " ".join(
            f"{mine.get(f'ours {c}', 0.0):{w},.0f}"
            for c, w in (("host_wait", 12), ("launch_latency", 10), ("sync", 10), ("other", 12))
        )
        print(f"  {stream:>6}  HTA   {hta_cols} |")
        print(f"  {'':>6}  rule  {rule_cols} |       {our_cols}")
        total_hta = sum(theirs.get(c, 0.0) for c in HTA_CATEGORIES)
        total_ours = sum(v for k, v in mine.items() if k.startswith("ours"))
        diff = abs(total_hta - total_ours)
        print(f"  {'':>6}  total HTA {total_hta:,.0f}  ours {total_ours:,.0f}  ({diff:,.0f} µs apart)")
        queue = f"HTA {theirs.get('queue_max', float('nan')):.0f}  ours {mine.get('queue_max', float('nan')):.0f}"
        print(f"  {'':>6}  queue length max (launched, not started): {queue}")


def main() -> None:
    logging.disable(logging.WARNING)
    if not PUBLIC.is_dir():
        sys.exit(f"{PUBLIC}: the public trace corpus is not here")
    np.set_printoptions(suppress=True)
    for name, path in TRACES.items():
        check(name, path)


if __name__ == "__main__":
    main()
