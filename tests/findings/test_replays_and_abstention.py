"""Rules on CUDA graph replays, device work that starts late, gains bounded by the window, and
rules that abstain when the data cannot support them (hand-built tables, exact ns)."""

from __future__ import annotations

from kinetoscope.findings import RULES, run_rules

from .built import Trace

US = 1_000
MS = 1_000_000


def findings_of(trace: Trace, rule: str) -> list:
    return run_rules(trace.tables(), None, [RULES[rule]])


def decode_steps(steps: int, nodes: int, *, offset_ns: int = 0, step_ns: int = 10 * MS) -> Trace:
    """Steps of ``step_ns``: one cudaGraphLaunch at the step's start replaying ``nodes`` kernels of 2 µs
    back to back (from ``offset_ns`` after the launch plus 5 µs), then cudaStreamSynchronize until
    the replay ends (the host reads the sampled tokens)."""
    trace = Trace()
    for step in range(steps):
        t0 = step * step_ns
        trace.add("op", f"ProfilerStep#{step}", t0, step_ns, step=step)
        correlation = 10_000 + step
        call = trace.add("runtime", "cudaGraphLaunch", t0, 20 * US, step=step, correlation=correlation)
        start = t0 + offset_ns + 5 * US
        for n in range(nodes):
            trace.add("kernel", f"node{n}", start + n * 2 * US, 2 * US, step=step, correlation=correlation,
                      launch_id=call)  # fmt: skip
        end = start + nodes * 2 * US
        trace.add("runtime", "cudaStreamSynchronize", t0 + 30 * US, end - t0 - 30 * US, step=step)
    return trace


def test_waiting_for_a_graph_replay_is_not_sync_in_step() -> None:
    # GIVEN decode steps that each replay 2,200 kernels and wait for the replay's tokens
    trace = decode_steps(3, 2_200)
    # THEN sync_in_step does not fire (no `.item()` remedy for reading a replay's result)
    assert findings_of(trace, "sync_in_step") == []


def test_a_stray_sync_beside_graph_replays_still_counts() -> None:
    trace = decode_steps(3, 100)
    for step in range(3):  # a sync after the replay ended: not waiting for it
        trace.add("runtime", "cudaStreamSynchronize", step * 10 * MS + 5 * MS, 1 * MS, step=step)
    (found,) = findings_of(trace, "sync_in_step")
    assert found.seen["calls"] == 3 and found.gain_ns == 3 * MS


def test_no_gain_exceeds_the_window() -> None:
    # GIVEN a sync recorded longer than the trace's events span (a damaged duration)
    trace = Trace()
    trace.launch("k", 0, 10 * US, 10 * US)
    trace.add("runtime", "cudaStreamSynchronize", 20 * US, 50 * US)
    trace.add("runtime", "cudaStreamSynchronize", 30 * US, 50 * US)
    (found,) = findings_of(trace, "sync_in_step")
    # THEN the gain is at most the window (80 µs, the first event's start to the last end), and says so
    assert found.gain_ns == 80 * US and "at most the rank's window" in found.gain_basis


def test_device_work_that_starts_long_after_its_launch_is_a_finding() -> None:
    # GIVEN replays whose first node starts 15 ms after the launch, in steps of 40 ms
    trace = decode_steps(3, 50, offset_ns=15 * MS, step_ns=40 * MS)
    (found,) = findings_of(trace, "device_starts_late")
    # THEN three launches (one per replay, not one per node), each 15.005 ms late, in a 120 ms
    # window (12.5%: over both 10 ms and 10%); a diagnosis, no gain
    assert found.seen["launches"] == 3 and found.seen["delay_p50_ns"] == 15 * MS + 5 * US
    assert found.seen["window_ns"] == 120 * MS and found.gain_ns == 0
    assert "clock offset" in found.summary


def test_device_starts_late_needs_10_ms_and_10_percent_of_the_window() -> None:
    late = "device_starts_late"
    # 4 ms late: 13% of a 30 ms window, but under 10 ms
    assert findings_of(decode_steps(3, 50, offset_ns=4 * MS), late) == []
    lower = run_rules(decode_steps(3, 50, offset_ns=4 * MS).tables(), {late: {"min_delay_ms": 1}}, [RULES[late]])
    assert len(lower) == 1
    # 15 ms late, but 5% of a 300 ms window
    assert findings_of(decode_steps(3, 50, offset_ns=15 * MS, step_ns=100 * MS), late) == []


def test_launches_without_device_work_make_device_rules_abstain() -> None:
    # GIVEN a GPU host profiled with CPU activity only: launch calls, no kernels
    trace = Trace()
    for step in range(3):
        for i in range(200):
            trace.add("runtime", "cudaLaunchKernel", step * MS + i * 3 * US, 2 * US, step=step, correlation=i)
        trace.add("runtime", "cudaStreamSynchronize", step * MS + 700 * US, 100 * US, step=step)
    for rule in ("gpu_idle_host_bound", "launch_bound", "sync_in_step", "device_starts_late", "tiny_ops"):
        (found,) = findings_of(trace, rule)
        # THEN each says it cannot judge, and why, instead of firing or staying silent
        assert found.cannot_judge.startswith("600 kernel launch call(s) but no device activity")
        assert found.summary.startswith("cannot judge: ") and found.gain_ns == 0 and found.severity == "info"
        assert found.to_json()["cannot_judge"] == found.cannot_judge


def test_a_rule_that_judges_has_no_cannot_judge_key() -> None:
    (found,) = findings_of(decode_steps(3, 50, offset_ns=15 * MS, step_ns=40 * MS), "device_starts_late")
    assert "cannot_judge" not in found.to_json()


def test_an_abstention_matches_the_findings_schema() -> None:
    from kinetoscope.findings.document import document

    from .test_public_traces import SCHEMA, validate

    trace = Trace()
    trace.add("runtime", "cudaLaunchKernel", 0, 2 * US, correlation=1)
    found = findings_of(trace, "launch_bound")
    assert [f.cannot_judge != "" for f in found] == [True]
    validate(document(found), SCHEMA)


def test_replays_without_their_capture_make_op_attribution_rules_abstain() -> None:
    # GIVEN a rank whose device time is all graph replays, with no cudaStreamBeginCapture in the trace
    trace = decode_steps(3, 100)
    (found,) = findings_of(trace, "tensor_core_shapes")
    # THEN the rules that tie kernels to ops say they cannot judge, and why
    assert found.cannot_judge.startswith("100% of the device time is CUDA/HIP graph replays whose capture")
    # AND with the capture in the trace they judge (here: nothing to report)
    trace.add("runtime", "cudaStreamBeginCapture", 0, 1 * US)
    assert findings_of(trace, "tensor_core_shapes") == []
