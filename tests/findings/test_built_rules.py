"""The GPU-only rules on small tables built by hand: each fires on its situation, with the numbers
the tables imply, and stays silent on a well-fed device."""

from __future__ import annotations

import pytest

from kinetoscope.findings import RULES, ThresholdError, parse_overrides, run_rules

from .built import Trace

US = 1_000


def findings_of(trace: Trace, rule: str, **overrides: float) -> list:
    return run_rules(trace.tables(), {rule: overrides} if overrides else None, [RULES[rule]])


def well_fed() -> Trace:
    """200 kernels of 50 µs back to back, each launched 100 µs ahead of its start."""
    trace = Trace()
    for i in range(200):
        trace.launch("gemm", host_ns=i * 50 * US, device_ns=100 * US + i * 50 * US, dur_ns=50 * US)
    return trace


def test_launch_bound_fires_on_many_short_kernels_with_an_idle_device() -> None:
    # GIVEN 300 kernels of 3 µs, each launched 10 µs after the previous one (device idle 70%)
    trace = Trace()
    for i in range(300):
        trace.launch("tiny_add", host_ns=i * 10 * US, device_ns=i * 10 * US + 5 * US, dur_ns=3 * US)
    # WHEN the rule runs
    (found,) = findings_of(trace, "launch_bound")
    # THEN every kernel is short, the device idle 70% of the span, and the gain is the launch time (300 × 2 µs)
    assert found.seen["kernels"] == 300 and found.seen["short_kernel_pct"] == 100.0
    assert found.seen["device_idle_pct_of_span"] == pytest.approx(70.0, abs=0.1)
    assert found.gain_ns == 300 * 2 * US
    assert "CUDA graph" in found.remedy and found.evidence


def test_idle_gaps_fire_when_the_next_kernel_was_launched_after_the_device_ran_dry() -> None:
    # GIVEN two kernels with a 1 ms gap; the second is launched 0.9 ms into the gap, after a slow op
    trace = Trace()
    trace.launch("a", host_ns=0, device_ns=10 * US, dur_ns=100 * US)
    trace.add("op", "aten::nonzero", 150 * US, 800 * US)
    trace.launch("b", host_ns=1_000 * US, device_ns=1_110 * US, dur_ns=100 * US)
    (found,) = findings_of(trace, "gpu_idle_host_bound")
    # THEN one gap of 1 ms, the host in aten::nonzero for 800 µs of it, and a link to the gap
    assert found.seen["gaps"] == 1 and found.gain_ns == 1_000 * US
    assert found.seen["host_during_gaps"][0] == {"name": "aten::nonzero", "ns": 800 * US, "count": 1}
    (evidence,) = found.evidence
    assert (evidence.start_ns, evidence.end_ns) == (110 * US, 1_110 * US)
    assert evidence.link.startswith("?page=timeline&start=") and evidence.link.endswith(f"&sel={evidence.event_id}")


def test_a_gap_with_work_already_queued_is_not_host_bound() -> None:
    # GIVEN the same gap, but the second kernel was launched before the first one ended (a device-side wait)
    trace = Trace()
    trace.launch("a", host_ns=0, device_ns=10 * US, dur_ns=100 * US)
    trace.launch("b", host_ns=50 * US, device_ns=1_110 * US, dur_ns=100 * US)
    assert findings_of(trace, "gpu_idle_host_bound") == []


def test_pageable_copies_are_named_with_bytes_and_gain() -> None:
    trace = Trace()
    for i in range(4):
        copy = trace.launch(
            "Memcpy HtoD (Pageable -> Device)", i * 200 * US, i * 200 * US + 5 * US, 100 * US, call="cudaMemcpyAsync"
        )
        trace.rows[copy - 1]["args"] = '{"bytes": 1048576}'
    trace.launch("Memcpy HtoD (Pinned -> Device)", 900 * US, 905 * US, 50 * US, call="cudaMemcpyAsync")
    (found,) = findings_of(trace, "pageable_copy")
    assert found.seen["copies"] == 4 and found.seen["bytes"] == 4 * 1048576
    assert found.gain_ns == 200 * US  # half of 400 µs at the default 2× speed-up
    assert findings_of(trace, "pageable_copy", pinned_speedup=4)[0].gain_ns == 300 * US


def test_gpu_sync_calls_are_named_by_the_op_that_made_them() -> None:
    trace = Trace()
    for step in range(3):
        op = trace.add("op", "aten::_local_scalar_dense", step * 1_000 * US, 300 * US, step=step)
        trace.add("runtime", "cudaStreamSynchronize", step * 1_000 * US + 10 * US, 250 * US, step=step, op_id=op)
        trace.launch("k", step * 1_000 * US + 400 * US, step * 1_000 * US + 410 * US, 100 * US)
    (found,) = findings_of(trace, "sync_in_step")
    assert found.seen["calls"] == 3 and found.seen["calls_per_step"] == 1.0
    assert found.seen["caused_by_op"][0]["name"] == "aten::_local_scalar_dense"
    assert found.gain_ns == 3 * 250 * US


def test_allocator_calls_after_the_first_step_are_thrash_and_before_it_are_not() -> None:
    trace = Trace()
    trace.add("runtime", "cudaMalloc", 0, 500 * US, step=0)
    for step in (1, 2):
        trace.add("runtime", "cudaMalloc", step * 1_000 * US, 400 * US, step=step)
        trace.add("runtime", "cudaFree", step * 1_000 * US + 500 * US, 100 * US, step=step)
    (found,) = findings_of(trace, "allocator_thrash")
    assert found.seen["calls"] == 4 and found.gain_ns == 2 * 500 * US
    assert findings_of(trace, "allocator_thrash", min_calls=5) == []


def test_lost_data_counts_launches_before_the_window_drops_and_truncation() -> None:
    trace = well_fed()
    trace.add("kernel", "early", 0, 30 * US, correlation=7)  # a correlation id whose launch is not in the trace
    trace.dropped_events = 12
    trace.warnings.append({"run": "r", "rank": 0, "kind": "truncated", "count": 1})
    (found,) = findings_of(trace, "lost_data")
    assert found.seen["launched_before_window"] == 1 and found.seen["dropped_events"] == 12
    assert found.seen["truncated_files"] == 1 and found.severity == "medium" and found.gain_ns == 0


def test_a_well_fed_device_gives_no_findings() -> None:
    assert run_rules(well_fed().tables()) == []


def test_overrides_are_checked_against_the_rules() -> None:
    assert parse_overrides(["launch_bound.min_kernels=10"]) == {"launch_bound": {"min_kernels": 10.0}}
    for bad in ("launch_bound.nope=1", "nope.min_kernels=1", "launch_bound.min_kernels=ten", "launch_bound"):
        with pytest.raises(ThresholdError):
            parse_overrides([bad])


def test_docs_list_every_rule_with_its_thresholds() -> None:
    from ..conftest import REPO

    page = (REPO / "docs" / "findings.md").read_text()
    for one in RULES.values():
        assert f"### {one.id.replace('_', '-')}" in page and one.docs.endswith(one.id.replace("_", "-"))
        row = next(line for line in page.splitlines() if line.startswith(f"| `{one.id}` |"))
        assert all(f"`{name}={value:g}`" in row for name, value in one.thresholds.items()), row


def test_copies_beside_no_kernel_are_exposed_and_copies_under_a_kernel_are_not() -> None:
    # GIVEN a 1 ms kernel, a 300 µs copy under it and a 400 µs copy after it
    trace = Trace()
    trace.launch("gemm", 0, 10 * US, 1_000 * US)
    trace.launch("Memcpy HtoD (Pinned -> Device)", 20 * US, 100 * US, 300 * US, call="cudaMemcpyAsync")
    trace.launch("Memcpy HtoD (Pinned -> Device)", 30 * US, 1_010 * US, 400 * US, call="cudaMemcpyAsync")
    (found,) = findings_of(trace, "copy_not_overlapped")
    assert (found.seen["exposed_ns"], found.seen["overlapped_ns"]) == (400 * US, 300 * US)
    assert found.gain_ns == 400 * US and found.seen["exposed_pct_of_span"] == pytest.approx(400 / 14, abs=0.01)
    assert findings_of(trace, "copy_not_overlapped", min_exposed_us=500) == []


def test_a_collective_beside_computation_is_overlapped_and_one_alone_is_exposed() -> None:
    # GIVEN a 1 ms all-reduce kernel: first beside a 1 ms GEMM on another stream, then after it
    def job(beside: bool) -> Trace:
        trace = Trace()
        trace.launch("gemm", 0, 10 * US, 1_000 * US)
        nccl = trace.launch("ncclDevKernel_AllReduce_Sum_f32", 5 * US, (10 if beside else 1_010) * US, 1_000 * US)
        trace.rows[nccl - 1]["collective"] = "allreduce"
        return trace

    assert findings_of(job(beside=True), "comm_not_overlapped") == []
    (found,) = findings_of(job(beside=False), "comm_not_overlapped")
    assert found.seen["overlap_pct"] == 0.0 and found.gain_ns == 1_000 * US
    assert found.seen["collectives"] == [{"name": "ncclDevKernel_AllReduce_Sum_f32", "ns": 1_000 * US, "count": 1}]


def test_without_steps_the_straggler_is_found_over_the_window() -> None:
    # GIVEN two CPU ranks without ProfilerStep#N meeting in three all-reduces over 30 ms, rank 1
    # coming 4 ms late to each: both end together, so rank 0 waits 4 ms in each
    trace = Trace()
    ms = 1_000 * US
    for rank, late_ms in ((0, 0), (1, 4)):
        trace.add("op", "aten::mm", 0, 1 * ms, step=-1, rank=rank)
        for i in range(3):
            start = (i * 10 + 3 + late_ms) * ms
            trace.add("collective", "gloo:all_reduce", start, (9 + i * 10) * ms - start + 1 * ms, step=-1, rank=rank)
    (found,) = findings_of(trace, "straggler")
    # THEN rank 1 is named by its arrivals, and rank 0's 12 ms of waiting is 40% of the 30 ms window
    assert (found.rank, found.seen["by"], found.seen["steps"], found.seen["arrived_last"]) == (1, "arrival", 0, 3)
    assert found.gain_ns == 12_000_000 and found.seen["loss_pct_of_step"] == 40.0
    assert "a window (40.0% of the 30.000 ms window (no ProfilerStep#N))" in found.summary
    assert findings_of(trace, "straggler", min_wait_pct=50) == []


def test_reserved_far_above_allocated_is_fragmentation() -> None:
    # GIVEN device 0 peaking at 6 GiB reserved for 2 GiB allocated, and device 1 at 2.5 for 2 GiB
    trace = well_fed()
    gib = float(1 << 30)
    for device, reserved in ((0, 6), (1, 2.5)):
        for t, allocated in ((0, 1), (1_000, 2)):
            for what, value in (("allocated", allocated), ("reserved", reserved)):
                name = f"device {device} memory {what}"
                trace.counters.append({"name": name, "ts_ns": t, "value": value * gib, "device": device})
    (found,) = findings_of(trace, "memory_fragmentation")
    assert found.seen == {"device": 0, "reserved_peak_bytes": 6 << 30, "allocated_peak_bytes": 2 << 30, "ratio": 3.0}
    assert found.gain_ns == 0 and found.evidence == []
    assert len(findings_of(trace, "memory_fragmentation", min_ratio=1.2)) == 2


def two_ranks(rank1_compute_ms: float) -> Trace:
    """Four 10 ms steps on two CPU ranks meeting in a gloo all-reduce at the end of each: rank 0
    computes 3 ms, rank 1 ``rank1_compute_ms``; whoever is early waits in the collective."""
    trace = Trace()
    ms = 1_000 * US
    for rank, compute_ms in ((0, 3.0), (1, rank1_compute_ms)):
        for step in range(4):
            start = step * 10 * ms
            trace.add("user_annotation", f"ProfilerStep#{step}", start, 10 * ms, step=step, rank=rank)
            trace.add("op", "aten::mm", start, int(compute_ms * ms), step=step, rank=rank, depth=1)
            end = start + 9 * ms
            trace.add("collective", "gloo:all_reduce", start + int(compute_ms * ms), end - start - int(compute_ms * ms),
                      step=step, rank=rank, depth=1)  # fmt: skip
    return trace


def test_the_straggler_is_the_rank_the_others_wait_for_in_their_collectives() -> None:
    # GIVEN rank 1 computing 8 ms a step where rank 0 computes 3 ms: rank 0 waits 6 ms, rank 1 1 ms
    (found,) = findings_of(two_ranks(8.0), "straggler")
    # THEN rank 1 arrives last at all four all-reduces, 5 ms late, and rank 0 waits 5 ms in each of
    # them (its 6 ms less rank 1's 1 ms): 5 ms a step, 20 ms over four steps
    assert (found.rank, found.seen["by"], found.seen["arrived_last"], found.seen["instances"]) == (1, "arrival", 4, 4)
    assert (found.seen["straggler_wait_ns"], found.seen["others_median_wait_ns"]) == (0, 20_000_000)
    assert found.seen["held_up"][0] == {"collective": "allreduce #0 of step 0 by order", "late_ns": 5_000_000,
                                        "others_wait_ns": 5_000_000}  # fmt: skip
    assert found.seen["wait_per_step_ns"] == 5_000_000 and found.gain_ns == 20_000_000
    assert found.severity == "high" and [e.name for e in found.evidence] == ["gloo:all_reduce"] * 4
    # AND ranks that wait alike, or a threshold above the loss, give none
    assert findings_of(two_ranks(3.0), "straggler") == []
    assert findings_of(two_ranks(8.0), "straggler", min_wait_pct=60) == []


def test_the_straggler_is_the_rank_whose_lateness_costs_most_not_the_one_last_most_often() -> None:
    # GIVEN two CPU ranks meeting in one all-reduce and then three broadcasts over 40 ms: rank 1
    # comes 20 ms late to the all-reduce, rank 0 comes 0.1 ms late to each broadcast (as a loaded
    # machine orders ranks leaving a collective together)
    trace = Trace()
    ms = 1_000 * US
    for rank in (0, 1):
        trace.add("op", "aten::mm", 0, 1 * ms, step=-1, rank=rank)
        start = (2 + (20 if rank == 1 else 0)) * ms
        trace.add("collective", "gloo:all_reduce", start, 24 * ms - start, step=-1, rank=rank)
        for i in range(3):
            start = (25 + 5 * i) * ms + (100 * US if rank == 0 else 0)
            trace.add("collective", "gloo:broadcast", start, (28 + 5 * i) * ms - start, step=-1, rank=rank)
    (found,) = findings_of(trace, "straggler")
    # THEN rank 1 holds the others up (rank 0 waits 20 ms for it), though rank 0 is last 3 times of 4
    assert (found.rank, found.seen["by"], found.seen["arrived_last"]) == (1, "arrival", 1)
    assert found.gain_ns == 20_000_000
