"""memory_near_capacity, gloo_wait and recompilation on small tables built by hand: each fires on
its situation with the numbers the tables imply, and stays silent below its threshold."""

from __future__ import annotations

import json

from .built import Trace
from .test_built_rules import findings_of, two_ranks

GIB = 1 << 30
MS = 1_000_000


def allocator_peak(peak_gib: float) -> Trace:
    """A 16 GiB device whose reserved bytes climb 4, 8 GiB then ``peak_gib``, each total set by an allocation."""
    trace = Trace()
    trace.device_memory = json.dumps({"0": 16 * GIB, "1": 80 * GIB})
    trace.add("op", "aten::linear", 0, 40 * MS)
    for i, gib in enumerate((4, 8, peak_gib)):
        ts_ns = (i + 1) * 10 * MS
        trace.add("allocation", "[memory]", ts_ns, 0, device=0, depth=1)
        for what, value in (("allocated", gib - 1), ("reserved", gib)):
            name = f"device 0 memory {what}"
            trace.counters.append({"name": name, "ts_ns": ts_ns, "value": value * GIB, "device": 0})
    return trace


def test_a_device_reserved_to_94_percent_is_near_capacity() -> None:
    # GIVEN reserved bytes peaking at 15 GiB of the device's 16 GiB (device 1 has no counters)
    (found,) = findings_of(allocator_peak(15), "memory_near_capacity")
    # THEN device 0 at 93.75%, 1 GiB free, the allocation at the peak as evidence; no time gain claimed
    assert found.seen == {**found.seen, "device": 0, "counter": "device 0 memory reserved", "used_pct": 93.75}
    assert (found.seen["peak_bytes"], found.seen["free_at_peak_bytes"]) == (15 * GIB, 1 * GIB)
    assert [(e.name, e.start_ns) for e in found.evidence] == [("[memory]", 30 * MS)]
    assert found.gain_ns == 0 and found.severity == "medium"
    assert findings_of(allocator_peak(15.8), "memory_near_capacity")[0].severity == "high"  # 98.75%


def test_a_device_with_headroom_is_silent() -> None:
    assert findings_of(allocator_peak(12), "memory_near_capacity") == []  # 75%
    assert len(findings_of(allocator_peak(12), "memory_near_capacity", min_used_pct=70)) == 1
    no_capacity = allocator_peak(15.9)
    no_capacity.device_memory = "{}"  # a trace without deviceProperties: nothing to compare with
    assert findings_of(no_capacity, "memory_near_capacity") == []


def host_samples(used_gib: list[float]) -> Trace:
    """Host memory samples every 100 ms on a 64 GiB host, beside one op; the process holds 2 GiB less."""
    trace = Trace()
    trace.add("op", "aten::cat", 0, 1_000 * MS)
    for i, used in enumerate(used_gib):
        samples = (("host memory total", 64), ("host memory used", used), ("process resident memory", used - 2))
        for name, value in samples:
            trace.counters.append({"name": name, "ts_ns": i * 100 * MS, "value": value * GIB, "device": -1})
    return trace


def test_a_host_nearly_full_is_near_capacity() -> None:
    (found,) = findings_of(host_samples([20, 40, 60, 30]), "memory_near_capacity")
    assert found.seen == {**found.seen, "device": "host", "peak_bytes": 60 * GIB, "capacity_bytes": 64 * GIB}
    assert (found.seen["used_pct"], found.seen["process_peak_bytes"], found.seen["peak_ts_ns"]) == (93.75, 58 * GIB,
                                                                                                  200 * MS)  # fmt: skip
    assert [e.name for e in found.evidence] == ["aten::cat"]  # what ran at the peak
    assert findings_of(host_samples([20, 40, 50, 30]), "memory_near_capacity") == []


def test_the_early_rank_waits_in_its_gloo_collectives() -> None:
    # GIVEN rank 0 entering each step's all_reduce at 3 ms, rank 1 at 8 ms; both leave at 9 ms
    (found,) = findings_of(two_ranks(8.0), "gloo_wait")
    # THEN rank 0 waited 5 ms in each of 4 collectives, rank 1 arriving last every time
    assert found.rank == 0 and found.gain_ns == found.seen["wait_ns"] == 4 * 5 * MS
    assert found.seen["collective_ns"] == 4 * 6 * MS and found.seen["matched_on_every_rank"] == 4
    assert found.seen["last_to_arrive"] == [{"rank": 1, "collectives": 4}]
    # AND ranks entering together do not wait
    assert findings_of(two_ranks(3.0), "gloo_wait") == []


def test_a_collective_missing_on_one_rank_is_not_counted() -> None:
    # GIVEN the same job where rank 1's trace lost step 3's all_reduce
    trace = two_ranks(8.0)
    trace.rows = [r for r in trace.rows if not (r["rank"] == 1 and r["step"] == 3 and r["name"] == "gloo:all_reduce")]
    (found,) = findings_of(trace, "gloo_wait")
    assert found.seen["collectives"] == 4 and found.seen["matched_on_every_rank"] == 3
    assert found.seen["wait_ns"] == 3 * 5 * MS


def test_recompiles_are_named_from_the_compiled_regions_when_compiles_carry_no_id() -> None:
    # GIVEN an older trace: frame compiles without compile_id labels, each followed by the region it built
    trace = Trace()
    for i, (compile_ms, region) in enumerate(((0, "0/0"), (30, "0/1"), (0, "0/1"), (40, "1/0"))):
        start = i * 100 * MS
        if compile_ms:
            trace.add("op", "_compile.compile_inner (dynamo_timed)", start, compile_ms * MS)
        trace.add("op", f"Torch-Compiled Region: {region}", start + 50 * MS, 1 * MS)
    (found,) = findings_of(trace, "recompilation")
    # THEN one recompile (0/1, 30 ms); the compile of frame 1 (1/0) is a first compile, not a recompile
    assert found.seen["recompiles"] == 1 and found.seen["frame_compiles"] == 2
    assert found.seen["recompiles_by_id"] == [{"compile_id": "0/1", "ns": 30 * MS}]
    assert found.seen["calls_per_graph"] == {"0/0": 1, "0/1": 2, "1/0": 1}
    assert found.gain_ns == 30 * MS


def test_ranks_without_gloo_collectives_are_silent() -> None:
    trace = two_ranks(8.0)
    trace.rows = [r for r in trace.rows if r["name"] != "gloo:all_reduce"]
    assert findings_of(trace, "gloo_wait") == []
