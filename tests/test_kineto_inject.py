"""The injection tool for real traces (tests/kineto_inject.py), on a generated GPU trace: the
culprit slower once a step with every later event shifted, a stall and a sync a step, jittered
copies, a one-step window; and through the verdict, a slower kernel found with its culprit first
while a one-step pair comes out inconclusive. On a real two-rank gloo job (tests/data/gloo-steps):
one rank late at each step's collective, the other waiting there, and the verdict naming that
collective."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.analysis.compare import verdict as compare_verdict
from kinetoscope.cli.diff import load_run
from kinetoscope.format.session_files import session_dir as layout

from . import kineto_inject as inject
from .kineto_gen import TrainingSpec, write_profile

SPEC = TrainingSpec(ranks=1, steps=8, layers=4, problems=False)


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> dict:
    profile = tmp_path_factory.mktemp("inject") / "profile"
    session = write_profile(profile, SPEC)[0]
    return inject.load(session / layout.TRACE_JSON)


def span(trace: dict) -> float:
    return max(float(e["ts"]) + float(e.get("dur", 0)) for e in inject.timed(trace))


def test_slow_makes_the_culprit_longer_once_a_step_and_shifts_what_follows(trace: dict) -> None:
    changed, name = inject.slow(trace, 50.0)
    assert name == inject.culprit_name(trace) and "gemm" in name
    before, after = inject.steps(trace), inject.steps(changed)
    assert len(after) == len(before) == SPEC.steps
    # THEN each step is 50 us longer, and the trace's end 8 x 50 us later
    for b, a in zip(before, after, strict=True):
        assert a.end_us - a.start_us == pytest.approx(b.end_us - b.start_us + 50.0, abs=0.01)
    assert span(changed) == pytest.approx(span(trace) + SPEC.steps * 50.0, abs=0.01)
    # AND the culprit's total time grew by exactly that, the original untouched
    def total(t: dict) -> float:
        return sum(float(e.get("dur", 0)) for e in inject.timed(t) if e.get("name") == name)
    assert total(changed) == pytest.approx(total(trace) + SPEC.steps * 50.0, abs=0.01)
    assert inject.steps(trace) == before


def test_a_reshaped_gemm_runs_its_op_on_twice_the_rows_and_its_kernel_slower(trace: dict) -> None:
    changed, name = inject.reshape_gemm(trace, 30.0)
    assert span(changed) == pytest.approx(span(trace) + SPEC.steps * 30.0, abs=0.01)

    def dims(t: dict) -> list:
        ids = {e["args"]["External id"] for e in inject.timed(t) if e.get("name") == name}
        ops = [e for e in inject.timed(t) if e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {})]
        return [e["args"]["Input Dims"] for e in ops if e["args"].get("External id") in ids]
    before, after = dims(trace), dims(changed)
    assert before and len(after) == len(before)
    for a, b in zip(after, before, strict=True):
        assert (a[0][0], a[0][1:], a[1:]) == (2 * b[0][0], b[0][1:], b[1:])


def test_a_stall_and_a_sync_each_step(trace: dict) -> None:
    for changed, name in ((inject.stall(trace, 40.0), inject.STALL_OP), (inject.sync(trace, 40.0), inject.SYNC_CALL)):
        added = [e for e in inject.timed(changed) if e.get("name") == name]
        assert len(added) == SPEC.steps and all(e["dur"] == 40.0 for e in added)
        assert span(changed) == pytest.approx(span(trace) + SPEC.steps * 40.0, abs=0.01)


def test_jitter_stretches_each_step_by_its_own_factor_and_a_window_keeps_its_first_steps(trace: dict) -> None:
    copy = inject.jitter(trace, 0.05, seed=3)
    ratios = [(a.end_us - a.start_us) / (b.end_us - b.start_us)
              for a, b in zip(inject.steps(copy), inject.steps(trace), strict=True)]
    assert all(0.95 - 1e-6 <= r <= 1.05 + 1e-6 for r in ratios) and len(set(round(r, 6) for r in ratios)) > 1
    starts = [s.start_us for s in inject.steps(copy)]
    assert starts == sorted(starts)
    assert [s.number for s in inject.steps(inject.first_steps(trace, 1))] == [inject.steps(trace)[0].number]


@pytest.mark.slow
def test_the_verdict_finds_a_slower_kernel_first_and_one_step_is_inconclusive(trace: dict, tmp_path: Path) -> None:
    def digest(name: str, t: dict) -> dict:
        profile = inject.save(t, tmp_path / name / "worker0.pt.trace.json").parent
        return load_run(str(profile), tmp_path / f"{name}-work").digest

    step_us = inject.steps(trace)[0].end_us - inject.steps(trace)[0].start_us
    changed, name = inject.slow(trace, 0.1 * step_us)
    base = digest("base", inject.jitter(trace, 0.01, 1))
    found = compare_verdict.answer(base, digest("slow", inject.jitter(changed, 0.01, 2)))
    assert found["verdict"]["verdict"] == "regression"
    lead = found["waterfall"]["parts"][0]
    assert (lead["part"], lead["behind"][0]["name"]) == ("device_compute", name)
    one = inject.first_steps(trace, 1)
    assert compare_verdict.answer(digest("one", one), digest("one2", one))["verdict"]["verdict"] == "inconclusive"


GLOO_JOB = Path(__file__).parent / "data" / "gloo-steps"  # a real two-rank gloo job, 8 steps


@pytest.fixture(scope="module")
def gloo() -> list[dict]:
    return [inject.load(GLOO_JOB / f"rank{r}.pt.trace.json.gz") for r in (0, 1)]


def test_a_late_rank_reaches_each_collective_later_and_the_other_waits_there(gloo: list[dict]) -> None:
    changed, waited = inject.delay_collective(gloo, 1, 500.0)
    assert waited == "gloo:all_reduce"

    def collectives(t: dict, name: str) -> list[dict]:
        return sorted((e for e in inject.timed(t) if e.get("name") == name), key=lambda e: float(e["ts"]))
    # THEN every step of both ranks is 500 us longer, and each rank's trace ends 8 x 500 us later
    for before, after in zip(gloo, changed, strict=True):
        b, a = inject.steps(before), inject.steps(after)
        assert len(a) == len(b) == 8
        for x, y in zip(b, a, strict=True):
            assert y.end_us - y.start_us == pytest.approx(x.end_us - x.start_us + 500.0, abs=0.01)
        assert span(after) == pytest.approx(span(before) + 8 * 500.0, abs=0.01)
    # AND rank 1 calls each all_reduce 500 us later in its step, its gloo work as long as before
    for name in ("c10d::allreduce_", "gloo:all_reduce"):
        calls = zip(collectives(gloo[1], name), collectives(changed[1], name), strict=True)
        assert all(float(y["dur"]) == float(x["dur"]) for x, y in calls)
    late = [float(e["ts"]) - s.start_us
            for s, e in zip(inject.steps(changed[1]), collectives(changed[1], "c10d::allreduce_"), strict=True)]
    early = [float(e["ts"]) - s.start_us
             for s, e in zip(inject.steps(gloo[1]), collectives(gloo[1], "c10d::allreduce_"), strict=True)]
    assert late == pytest.approx([t + 500.0 for t in early], abs=0.01)
    # AND rank 0 waits 500 us longer in each all_reduce
    waits = zip(collectives(gloo[0], waited), collectives(changed[0], waited), strict=True)
    assert [float(y["dur"]) - float(x["dur"]) for x, y in waits] == pytest.approx([500.0] * 8, abs=0.01)


def test_the_verdict_names_the_collective_waited_in_on_a_real_gloo_job(gloo: list[dict], tmp_path: Path) -> None:
    def digest(name: str, traces: list[dict]) -> dict:
        for rank, t in enumerate(traces):
            inject.save(t, tmp_path / name / f"rank{rank}.pt.trace.json")
        return load_run(str(tmp_path / name), tmp_path / f"{name}-work").digest

    # GIVEN a delay of 3 median steps: this capture's steps vary from 13 to 37 ms
    step_us = sorted(s.end_us - s.start_us for s in inject.steps(gloo[0]))[4]
    changed, waited = inject.delay_collective(gloo, 1, 3 * step_us)
    found = compare_verdict.answer(digest("base", gloo), digest("late", changed))
    assert found["verdict"]["verdict"] == "regression"
    # THEN on the CPU the change is host time, the all_reduce the other rank waited in first behind it
    lead = found["waterfall"]["parts"][0]
    assert (lead["part"], lead["behind"][0]["what"], lead["behind"][0]["name"]) == ("host_only", "collective", waited)


def test_a_gemm_is_not_reshaped_in_a_trace_without_input_shapes(trace: dict) -> None:
    # GIVEN the trace recorded without record_shapes: no op says its input dims
    bare = inject.jitter(trace, 0.0, 0)
    for e in inject.timed(bare):
        (e.get("args") or {}).pop("Input Dims", None)
    # THEN there is no GEMM to reshape (not some other op made slower instead)
    with pytest.raises(ValueError, match="input shapes"):
        inject.reshape_gemm(bare, 30.0)


def test_a_sync_is_not_put_inside_a_graph_replay() -> None:
    # GIVEN a step [0,100) us whose kernels k1 [10,40), k2 [40,70), k3 [70,90) one cudaGraphLaunch queued
    def event(name: str, cat: str, ts: float, dur: float, **args: object) -> dict:
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1 if cat != "kernel" else 7,
                "ts": ts, "dur": dur, "args": args}
    trace = {"traceEvents": [
        event("ProfilerStep#1", "user_annotation", 0, 100),
        event("cudaGraphLaunch", "cuda_runtime", 5, 3, correlation=1),
        *(event(k, "kernel", t, 30 if k != "k3" else 20, correlation=1)
          for k, t in (("k1", 10), ("k2", 40), ("k3", 70))),
    ]}
    changed = inject.sync(trace, 10.0)
    # THEN the sync waits for the replay's end (k3), not between k2 and k3, which run back to back
    added = next(e for e in inject.timed(changed) if e["name"] == inject.SYNC_CALL)
    assert added["ts"] == 90.0
