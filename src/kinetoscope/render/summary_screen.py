"""The summary in one screen (100 columns, 60 lines at most for one rank or eight): what ran, step
time, where the device's time goes, the findings, the top kernels and ops, memory, and which
sections were left out and how to see them. Every figure is read from the analyses' tables as
they are; this module only picks, sums over ranks and lays out.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from kinetoscope.render import Section
from kinetoscope.render.values import human_bytes, middle, shorten

NS_PER_MS = 1_000_000
NS_PER_US = 1_000
WIDTH = 100
TOP_ROWS = 5
# The analyses the one screen reads; a one-screen summary makes these alone (and the findings).
SHOWN = ("overview", "top_ops", "top_kernels", "temporal_breakdown", "steady_state", "stragglers")

# Why an analysis has no rows, by the analyses that share the reason (else: "no rows").
NO_DATA_REASONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("no device activity", ("top_kernels", "temporal_breakdown", "kernel_type_breakdown", "idle_time", "idle_gaps")),
    ("no device activity", ("kernel_launches", "queue_lengths", "memory_operations", "roofline_devices")),
    ("no device time by op", ("gpu_time_by_op", "gpu_time_by_shape", "gpu_time_by_top_op", "gpu_time_by_module")),
    ("no collectives", ("communication_overlap",)),
    ("no collectives matched across ranks", ("matched_collectives", "collective_arrivals", "collective_waits")),
    ("fewer than two ranks", ("step_times", "stragglers", "clock_offsets")),
    ("no CUDA/HIP graph replays", ("cuda_graph_replays", "cuda_graph_capture_ops", "cuda_graph_unmatched")),
    ("no host CPU or memory samples", ("host_samples",)),
    ("no memory counters (profile_memory=True records them)", ("device_memory",)),
    ("no memory snapshots", ("allocation_peaks", "top_allocation_stacks")),
    ("no recomputed forward ops", ("activation_recomputation",)),
    ("no ops with known FLOPs", ("op_roofline",)),
)


@dataclass(frozen=True)
class RunFacts:
    """What the analyses do not say about the run: each rank's device names and memory capacity."""

    device_names: Mapping[tuple[str, int], str] = field(default_factory=dict)
    capacity_bytes: Mapping[tuple[str, int], int] = field(default_factory=dict)


def write_screen(
    sections: list[Section], out: IO[str], *, findings: list[str], facts: RunFacts, width: int = WIDTH,
    on_demand: Iterable[str] = (),
) -> None:
    """The one-screen summary of ``sections`` with the findings' lines (``findings``) in it;
    ``on_demand``: the analyses not made for it, named for ``--section``."""
    rows = {s.name: s.table.to_pylist() for s in sections}
    blocks = [
        what_ran(rows, facts) + step_time(rows) + device_time(rows),
        findings,
        top_kernels(rows, width),
        top_ops(rows, width),
        memory(rows, facts),
        left_out(sections, width) + more(sections, width, tuple(on_demand)),
    ]
    lines = [line for block in blocks if block for line in [*block, ""]]
    out.write("\n".join(shorten(line, width) if not line.startswith("   kinetoscope ") else line for line in lines))


def _ranks(rows: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return rows.get("overview", [])


def _span(values: Iterable[float], scale: float, digits: int = 1) -> str:
    found = sorted(values)
    if not found:
        return "-"
    low, high = f"{found[0] / scale:,.{digits}f}", f"{found[-1] / scale:,.{digits}f}"
    return low if low == high else f"{low}-{high}"


def what_ran(rows: Mapping[str, list[dict[str, Any]]], facts: RunFacts) -> list[str]:
    """``Ran: 8 ranks (run dlrm) on 8 x Tesla V100; 1 step each; window 14.6-20.1 ms per rank``."""
    ranks = _ranks(rows)
    if not ranks:
        return ["Ran: no events"]
    runs = sorted({r["run"] for r in ranks})
    who = f"{len(ranks)} rank{'s' if len(ranks) > 1 else ''} ({'runs' if len(runs) > 1 else 'run'} {', '.join(runs)})"
    names = [facts.device_names.get((r["run"], r["rank"]), "") for r in ranks]
    active = any(r["span_ns"] for r in rows.get("temporal_breakdown", []))
    on = _devices(names) if any(names) else "devices the trace does not name" if active else "the host only"
    steps = sorted({r["steps"] for r in ranks})
    counted = f"{_span(steps, 1, 0)} step{'s' if steps[-1] != 1 else ''}{' each' if len(ranks) > 1 else ''}"
    window = f"window {_span((r['wall_ns'] for r in ranks), NS_PER_MS)} ms{' per rank' if len(ranks) > 1 else ''}"
    return [f"Ran: {who} on {on}; {counted if steps[-1] else 'no steps'}; {window}"]


def _devices(names: list[str]) -> str:
    counts: dict[str, int] = {}
    for name in names:
        counts[name or "no device"] = counts.get(name or "no device", 0) + 1
    return ", ".join(f"{n} x {name}" if n > 1 else name for name, n in counts.items())


def step_time(rows: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """Step time per rank (mean over the profiled steps), its steady-state median, and the slowest rank."""
    ranks = [r for r in _ranks(rows) if r["steps"] and r["step_mean_ns"] is not None]
    if not ranks:
        return ["Step time: no steps (ProfilerStep#N annotations) in the trace"]
    several = len(_ranks(rows)) > 1
    line = f"Step time: mean {_span((r['step_mean_ns'] for r in ranks), NS_PER_MS)} ms"
    steps = ranks[0]["steps"]
    line += " by rank" if several else f" over {steps} step{'s' if steps != 1 else ''}"
    steady = [r for r in rows.get("steady_state", []) if r.get("median_step_ns") is not None]
    warm = max((r["warmup_steps"] or 0 for r in steady), default=0)
    if warm:  # else the steady state is every step: its median says nothing more
        line += f"; steady-state median {_span((r['median_step_ns'] for r in steady), NS_PER_MS)} ms"
        line += f" ({warm} warm-up step{'s' if warm != 1 else ''} left out)"
    slowest = [r for r in rows.get("stragglers", []) if r.get("straggler")]
    if slowest:
        line += f"; straggler: rank {slowest[0]['rank']}"
    return [line]


def device_time(rows: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The device's time split, as a share of its span (first to last device work), summed over ranks."""
    split = [r for r in rows.get("temporal_breakdown", []) if r["span_ns"]]
    if not split:
        return ["Device time: no device activity"]
    span = sum(r["span_ns"] for r in split)
    total = f"{span / NS_PER_MS:,.1f} ms"
    where = f"{len(split)} ranks, {total} summed" if len(split) > 1 else total
    parts = []
    for label, column in (("compute", "compute_ns"), ("exposed communication", "communication_ns"),
                          ("memory", "memory_ns"), ("idle", "idle_ns")):  # fmt: skip
        share = f"{100 * sum(r[column] for r in split) / span:.1f}%"
        by_rank = f" ({_span((100 * r[column] / r['span_ns'] for r in split), 1)}% by rank)" if len(split) > 1 else ""
        parts.append(f"{label} {share}{by_rank}")
    head = f"Device time, share of the device span (first to last device work; {where}):"
    if len(", ".join(parts)) + 2 <= WIDTH:
        return [head, "  " + ", ".join(parts)]
    return [head, "  " + ", ".join(parts[:2]) + ",", "  " + ", ".join(parts[2:])]


def _summed(records: list[dict[str, Any]], key: str, sums: tuple[str, ...]) -> list[dict[str, Any]]:
    """``records`` summed by ``key`` over ranks (``sums`` summed, ``ranks`` counted), largest first."""
    by_name: dict[str, dict[str, Any]] = {}
    for record in records:
        found = by_name.setdefault(record[key], {key: record[key], "ranks": set(), **dict.fromkeys(sums, 0)})
        found["ranks"].add((record["run"], record["rank"]))
        for column in sums:
            found[column] += record[column] or 0
    return sorted(by_name.values(), key=lambda r: (-r[sums[0]], r[key]))


def _table(title: str, head: list[str], body: list[list[str]], width: int) -> list[str]:
    """``title``, then the rows: the first column (a name) shortened in the middle to what the
    numbers, right-aligned, leave of ``width``."""
    sizes = [max(len(row[i]) for row in [head, *body]) for i in range(1, len(head))]
    numbers = sum(size + 2 for size in sizes)
    name_width = max(min(width - numbers, max(len(row[0]) for row in [head, *body])), 12)

    def line(row: list[str]) -> str:
        cells = "".join(f"  {cell:>{size}}" for cell, size in zip(row[1:], sizes, strict=True))
        return f"{middle(row[0], name_width):<{name_width}}{cells}"

    return [title, line(head), *(line(row) for row in body)]


def top_kernels(rows: Mapping[str, list[dict[str, Any]]], width: int) -> list[str]:
    def cells(r: dict[str, Any]) -> list[str]:
        mean_us = r["total_ns"] / max(r["calls"], 1) / NS_PER_US
        return [f"{r['calls']:,}", f"{r['total_ns'] / NS_PER_MS:,.3f}", f"{mean_us:,.1f}"]

    top = _Top("top_kernels", "Top kernels by device time", "kernel", ("total_ns", "calls"),
               ["calls", "total ms", "mean us"], cells)  # fmt: skip
    return top.lines(rows, width)


def top_ops(rows: Mapping[str, list[dict[str, Any]]], width: int) -> list[str]:
    def cells(r: dict[str, Any]) -> list[str]:
        return [f"{r['calls']:,}", f"{r['self_ns'] / NS_PER_MS:,.3f}", f"{r['total_ns'] / NS_PER_MS:,.3f}"]

    top = _Top("top_ops", "Top ops and annotations by host self time", "op or annotation",
               ("self_ns", "total_ns", "calls"), ["calls", "self ms", "total ms"], cells)  # fmt: skip
    return top.lines(rows, width)


@dataclass(frozen=True)
class _Top:
    """A top-N table of one analysis, its rows summed by name over the ranks (the first measure ranks them)."""

    analysis: str
    title: str
    name_header: str
    measures: tuple[str, ...]
    headers: list[str]
    cells: Callable[[dict[str, Any]], list[str]]

    def lines(self, rows: Mapping[str, list[dict[str, Any]]], width: int) -> list[str]:
        records = rows.get(self.analysis, [])
        if not records:
            return []
        ranks = len({(r["run"], r["rank"]) for r in records})
        summed = _summed(records, "name", self.measures)[:TOP_ROWS]
        several = ranks > 1
        title = f"{self.title}{f', summed over {ranks} ranks' if several else ''}"
        head = [self.name_header, *(["ranks"] if several else []), *self.headers]
        body = [[r["name"], *([str(len(r["ranks"]))] if several else []), *self.cells(r)] for r in summed]
        return _table(title, head, body, width)


def memory(rows: Mapping[str, list[dict[str, Any]]], facts: RunFacts) -> list[str]:
    """The device memory peak against the device's capacity where known, and the host's peak."""
    ranks = _ranks(rows)
    parts = []
    peaks = [r for r in ranks if r.get("device_memory_peak_bytes") is not None]
    if peaks:
        top = max(peaks, key=lambda r: r["device_memory_peak_bytes"])
        peak = top["device_memory_peak_bytes"]
        capacity = facts.capacity_bytes.get((top["run"], top["rank"]))
        of = f" of {human_bytes(capacity)} ({100 * peak / capacity:.0f}%)" if capacity else " (capacity unknown)"
        where = f" on rank {top['rank']}" if len(ranks) > 1 else ""
        parts.append(f"device peak {human_bytes(peak)}{of}{where}")
    else:
        parts.append("no device memory counters (profile_memory=True records them)")
    allocation = [r["allocation_peak_bytes"] for r in ranks if r.get("allocation_peak_bytes") is not None]
    if allocation:
        parts.append(f"snapshot allocation peak {human_bytes(max(allocation))}")
    host = [r["host_memory_peak_bytes"] for r in ranks if r.get("host_memory_peak_bytes") is not None]
    if host:
        parts.append(f"host peak {human_bytes(max(host))}")
    return ["Memory: " + "; ".join(parts)]


def left_out(sections: list[Section], width: int) -> list[str]:
    """One paragraph naming the sections with no rows and why."""
    empty = [s.name for s in sections if not s.table.num_rows]
    if not empty:
        return []
    reasons: dict[str, list[str]] = {}
    for name in empty:
        reason = next((why for why, names in NO_DATA_REASONS if name in names), "no rows")
        reasons.setdefault(reason, []).append(name)
    said = "; ".join(f"{why} ({', '.join(names)})" for why, names in reasons.items())
    return textwrap.wrap(f"Left out, no data: {said}.", width, subsequent_indent="  ", break_on_hyphens=False)


def more(sections: list[Section], width: int, on_demand: tuple[str, ...] = ()) -> list[str]:
    """The line that names the other sections and how to see them: those with rows, then those not
    made for the screen (``on_demand``), which ``--section`` makes."""
    names = ", ".join(["findings", *(s.name for s in sections if s.table.num_rows)])
    asked = f"; computed on demand: {', '.join(on_demand)}" if on_demand else ""
    text = (f"More: --section NAME shows one in full ({names}{asked}); --all every section; --json and --markdown "
            "keep all.")  # fmt: skip
    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False)
