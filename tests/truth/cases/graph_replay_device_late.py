"""Graph replays whose device work starts 147 ms after its launch (the device's clock offset from
the host's, or a deep queue): a finding says so, and no host-side rule blames the waits."""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace

STEPS, NODES = 4, 200
STEP_US = 300_000.0  # 300 ms steps
LATE_US = 147_000.0  # every replay's first kernel starts 147 ms after its graph launch
NODE_US = 100.0
SYNC_TAIL_US = 2.0  # the synchronize returns 2 µs after the replay ends


def trace() -> RankTrace:
    t = RankTrace(rank=0)
    for step in range(STEPS):
        start = step * STEP_US
        t.step(step, start, STEP_US - 1_000)
        ext = t.op("CUDAGraph.replay", start + 10, 60.0, cat="user_annotation")
        corr = 10_000 + step
        t.x("cuda_runtime", "cudaGraphLaunch", start + 20, 25.0, **{"External id": ext, "correlation": corr})
        for node in range(NODES):
            t.device_work(f"moe_layer_{node % 40}", start + 20 + LATE_US + node * NODE_US, NODE_US,
                          correlation=corr, ext=ext)  # fmt: skip
        replay_end = start + 20 + LATE_US + NODES * NODE_US
        t.x("cuda_runtime", "cudaStreamSynchronize", start + 60, replay_end + SYNC_TAIL_US - start - 60)
    return t


def build(folder: Path) -> Path:
    return trace().write(folder / "traces")


# Hand count: one launch per replay, each LATE_US late; the window is the first event's start (the
# first step at 0) to the last one's end (the last step's marker, STEPS x STEP_US - 1 ms). The
# device's idle is never sync while the replay is queued; only the synchronize's 2 µs past each
# replay's end, before the next step's launch, is (the host blocked, nothing queued).
DELAY_NS = round(LATE_US * 1000)
WINDOW_NS = round(((STEPS - 1) * STEP_US + STEP_US - 1_000) * 1000)

CASE = Case(
    name="graph_replay_device_late",
    situation="graph replays whose device work starts 147 ms after the launches (clock offset or queueing)",
    source="libkineto's CUPTI activities for graph kernels (correlation of the cudaGraphLaunch)",
    truth="hand count",
    build=build,
    numbers={
        "summary:kernel_launches[rank=0].launched": STEPS,
        "summary:kernel_launches[rank=0].delay_p50_ns": DELAY_NS,
        "findings:findings[rule=device_starts_late].seen.delay_p50_ns": DELAY_NS,
        "findings:findings[rule=device_starts_late].seen.delay_min_ns": DELAY_NS,
        "findings:findings[rule=device_starts_late].seen.window_ns": WINDOW_NS,
        "summary:idle_time[rank=0,stream=-1].sync_ns": round((STEPS - 1) * SYNC_TAIL_US * 1000),
    },
    expected_findings=("device_starts_late",),
    forbidden_findings=("sync_in_step",),
)
