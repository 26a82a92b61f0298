"""Truth check against Holistic Trace Analysis: per-rank temporal breakdown, kernel-type
breakdown and communication/computation overlap, both tools on the same public GPU traces.

For each trace set, HTA loads the traces (``TraceAnalysis(trace_dir, include_last_profiler_step=True)``)
and kinetoscope imports, ingests and runs its analyses. Times are compared relative to the
rank's device span (temporal), to the total device time (kernel types), and in percentage
points (overlap); the check passes when every difference is within 1 %.

HTA's kernel-type sums cut every segment of its sweep to whole microseconds; on traces with
sub-microsecond timestamps that loses up to 1 µs per segment. kinetoscope keeps nanoseconds,
so the kernel-type figures are compared after the same cut, and the exact figure is printed
beside any that differs by more than 1 % before the cut.

HTA keeps, when a trace set has several ``ProfilerStep`` names, only the device work launched
by a host call that starts before the last step ends; the comparison applies the same window
to kinetoscope's events (kinetoscope's own summary counts all device work of the trace).
HTA recognises communication kernels by the ``nccl`` name prefix; kinetoscope by Kineto's
collective metadata, then NCCL/RCCL kernel names: on these traces the two agree.

Needs HTA (``pip install -e '.[bench]'``); uses the corpus under ../shared.

  PYTHONPATH=src python benchmarks/hta_truth.py
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
PUBLIC = REPO.parent / "shared" / "datasets" / "public-traces"
TOLERANCE_PCT = 1.0
SETS: dict[str, list[str]] = {
    "dlrm 8 ranks": [
        f"param/et_replay/tests/inputs/dlrm_kineto/{p.name}"
        for p in sorted((PUBLIC / "param/et_replay/tests/inputs/dlrm_kineto").glob("*.json"))
    ],
    "sampled 2 ranks": [
        "hta/tests/data/trace_filter/sampled_rank-0.json.gz",
        "hta/tests/data/trace_filter/sampled_rank-1.json.gz",
    ],
    "nccl_parser_config": ["hta/tests/data/nccl_parser_config/nccl_data.json.gz"],
    "ns_resolution": ["hta/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"],
    "negative_queue_length": ["hta/tests/data/negative_queue_length_values_check/rank0.json.gz"],
    "trace_diff control": ["hta/tests/data/trace_diff/control/control.json.gz"],
    "trace_diff test": ["hta/tests/data/trace_diff/test/test.json.gz"],
    "alexnet": ["hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"],
    "gpu_user_annotation": ["hta/tests/data/with_gpu_user_annotation/step_based_trace_2543932.json.gz"],
    "amd mi250": ["hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"],
    "resnet rtx2080": ["param/et_replay/tests/inputs/resnet_kineto.json.gz"],
}


def run_hta(trace_dir: Path) -> dict[str, Any]:
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=str(trace_dir), include_last_profiler_step=True)
    temporal = analysis.get_temporal_breakdown(visualize=False)
    types, _ = analysis.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    steps = {name for name in analysis.t.symbol_table.get_sym_id_map() if "ProfilerStep" in name}
    return {
        "temporal": {int(r["rank"]): r for r in temporal.to_dict("records")},
        "types": {r["kernel_type"]: float(r["sum"]) for r in types.to_dict("records")},
        "overlap": {int(r["rank"]): float(r["comp_comm_overlap_pctg"]) for r in overlap.to_dict("records")},
        "windowed": len(steps) > 1,
    }


def hta_window(events: pa.Table, flows: pa.Table) -> pa.Table:
    """Device rows HTA keeps with several steps: launched by a host call starting before the last step ends."""
    from kinetoscope.analysis.tables import ints, strings, where

    names = strings(events, "name")
    ids, ts, ends = ints(events, "id"), ints(events, "ts_ns"), ints(events, "ts_ns") + ints(events, "dur_ns")
    ranks, layers = ints(events, "rank"), strings(events, "layer")
    last_end = {}
    for rank, name, end in zip(ranks.tolist(), names, ends.tolist(), strict=True):
        if name.startswith("ProfilerStep"):
            last_end[rank] = max(last_end.get(rank, 0), end)
    launch_ts = dict(zip(ids.tolist(), ts.tolist(), strict=True))
    launched = {}
    for src, dst, kind in zip(
        ints(flows, "src_id").tolist(), ints(flows, "dst_id").tolist(), strings(flows, "kind"), strict=True
    ):
        if kind == "runtime_device":
            launched[dst] = launch_ts.get(src, 1 << 62)
    keep = [
        layer != "device" or (i in launched and launched[i] <= last_end.get(r, 1 << 62))
        for i, r, layer in zip(ids.tolist(), ranks.tolist(), layers, strict=True)
    ]
    return where(events, np.asarray(keep, dtype=bool))


def run_ours(traces: list[Path], work: Path, windowed: bool) -> dict[str, Any]:
    from kinetoscope.analysis import ANALYSES_BY_NAME, EVENT_COLUMNS
    from kinetoscope.importer.trace_import import ImportOptions, import_trace
    from kinetoscope.ingest import IngestOptions, ingest
    from kinetoscope.report.opening import open_dataset

    for trace in traces:
        import_trace(trace, ImportOptions(out_dir=work / "prof"))
    ingest(IngestOptions(profile_dir=work / "prof", out=work / "ds"))
    with open_dataset(work / "ds") as dataset:
        events, flows = dataset.table("events", EVENT_COLUMNS), dataset.table("flows")
    tables = {"events": hta_window(events, flows) if windowed else events}
    results: dict[str, Any] = {
        name: ANALYSES_BY_NAME[name](tables).to_pylist()
        for name in ("temporal_breakdown", "kernel_type_breakdown", "communication_overlap")
    }
    results["types_truncated_us"] = types_truncated_like_hta(tables["events"])
    return results


def types_truncated_like_hta(events: pa.Table) -> dict[str, float]:
    """Our kernel-type sweep with each segment cut to whole µs, as HTA computes it (``astype(int)``)."""
    from kinetoscope.analysis.device import device_time
    from kinetoscope.analysis.tables import ints, merge, per_rank

    totals: dict[str, float] = {}
    for _, rank_events in per_rank(device_time.device_work(events)):
        origin = int(ints(rank_events, "ts_ns").min()) // 1000 * 1000  # keep float µs exact
        starts, types = ints(rank_events, "ts_ns") - origin, device_time.kernel_types(rank_events)
        ends = starts + ints(rank_events, "dur_ns")
        times, deltas = [], []
        for bit in range(3):
            merged_starts, merged_ends = merge(starts[types == bit], ends[types == bit])
            times += [merged_starts / 1000.0, merged_ends / 1000.0]
            deltas += [np.full(len(merged_starts), 1 << bit), np.full(len(merged_ends), -(1 << bit))]
        t, d = np.concatenate(times), np.concatenate(deltas)
        order = np.argsort(t, kind="stable")
        state, spans = np.cumsum(d[order])[:-1], np.diff(t[order]).astype(int)
        for key in np.unique(state[state > 0]).tolist():
            label = " overlapping ".join(n for b, n in enumerate(device_time.KERNEL_TYPES) if key & (1 << b))
            totals[label] = totals.get(label, 0.0) + float(spans[state == key].sum())
    return totals


def differences(hta: dict[str, Any], ours: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """(what, HTA, ours, difference in %) for every compared figure."""
    out = []
    for row in ours["temporal_breakdown"]:
        theirs = hta["temporal"].get(row["rank"])
        if theirs is None or not row["span_ns"]:
            continue
        span_us = row["span_ns"] / 1000
        for label, mine, key in (
            ("idle", row["idle_ns"], "idle_time(us)"),
            ("compute", row["compute_ns"], "compute_time(us)"),
            ("non-compute", row["span_ns"] - row["compute_ns"] - row["idle_ns"], "non_compute_time(us)"),
        ):
            out.append(
                (
                    f"rank {row['rank']} {label} (us)",
                    float(theirs[key]),
                    mine / 1000,
                    100 * abs(mine / 1000 - theirs[key]) / span_us,
                )
            )
    exact = {r["kernel_type"]: r["time_ns"] / 1000 for r in ours["kernel_type_breakdown"] if r["rank"] == -1}
    truncated = ours["types_truncated_us"]
    whole = sum(hta["types"].values()) or 1.0
    for label in sorted(set(truncated) | set(hta["types"])):
        theirs, mine = hta["types"].get(label, 0.0), truncated.get(label, 0.0)
        gap = 100 * abs(exact.get(label, 0.0) - theirs) / whole
        note = f" [ns-exact {exact.get(label, 0.0):,.1f} us, {gap:.2f} % from HTA]" if gap > TOLERANCE_PCT else ""
        out.append(
            (
                f"all ranks {label} (us, cut to whole us per segment as HTA does){note}",
                theirs,
                mine,
                100 * abs(mine - theirs) / whole,
            )
        )
    for row in ours["communication_overlap"]:
        if row["communication_ns"] and row["rank"] in hta["overlap"]:
            theirs = hta["overlap"][row["rank"]]
            out.append(
                (f"rank {row['rank']} comm overlap (%)", theirs, row["overlap_pct"], abs(row["overlap_pct"] - theirs))
            )
    return out


def check(name: str, paths: list[str]) -> bool:
    traces = [PUBLIC / p for p in paths]
    work = Path(tempfile.mkdtemp(prefix="kinetoscope-truth-"))
    try:
        (work / "hta").mkdir()
        for trace in traces:
            (work / "hta" / trace.name).symlink_to(trace)
        try:
            hta = run_hta(work / "hta")
        except Exception as exc:  # noqa: BLE001 - report HTA's own failures and go on
            print(f"{name}: HTA could not analyse it ({type(exc).__name__}: {exc}); skipped")
            return True
        rows = differences(hta, run_ours(traces, work, hta["windowed"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    worst = max((r[3] for r in rows), default=0.0)
    ok = worst <= TOLERANCE_PCT
    window = ", HTA's step window applied" if hta["windowed"] else ""
    print(f"{name}: {len(rows)} figures, largest difference {worst:.3f} %{window} -> {'OK' if ok else 'DIFFERS'}")
    for what, theirs, mine, diff in rows:
        if diff > TOLERANCE_PCT:
            print(f"    {what}: HTA {theirs:,.1f}  kinetoscope {mine:,.1f}  ({diff:.2f} %)")
    return ok


def main() -> None:
    logging.disable(logging.WARNING)
    if not PUBLIC.is_dir():
        sys.exit(f"{PUBLIC}: the public trace corpus is not here")
    results = [check(name, paths) for name, paths in SETS.items()]
    print(f"\n{sum(results)} of {len(results)} trace sets agree with HTA within {TOLERANCE_PCT} %")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
