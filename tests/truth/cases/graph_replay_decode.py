"""A decode step under CUDA graphs: one cudaGraphLaunch replays 2,200 kernels, then the host waits
for the replay's result in cudaStreamSynchronize."""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace

STEPS, NODES = 3, 2_200
STEP_US = 20_000.0  # a 20 ms decode step
LAUNCH_US = 50.0  # the graph launch call's start, after the step begins
FIRST_NODE_US = 80.0  # the replay's first kernel starts 30 µs after the launch call
NODE_US, NODE_GAP_US = 4.0, 1.0  # each node 4 µs, 1 µs apart (device-side dependencies)
SYNC_TAIL_US = 5.0  # the synchronize returns 5 µs after the replay's last kernel ends


def replay(t: RankTrace, step: int) -> tuple[float, float]:
    """One step; (graph launch start, replay end) in µs. Kineto links every replayed kernel to the
    graph launch by its correlation id (libkineto's CUPTI activity for a graph's kernel carries the
    correlation of the cudaGraphLaunch that replayed it) and gives it the launch's External id."""
    start = step * STEP_US
    t.step(step, start, STEP_US - 100)
    ext = t.op("CUDAGraph.replay", start + LAUNCH_US - 10, 60.0, cat="user_annotation")
    corr = 10_000 + step
    t.x("cuda_runtime", "cudaGraphLaunch", start + LAUNCH_US, 25.0,
        **{"External id": ext, "correlation": corr, "cbid": 311})  # fmt: skip
    ts = start + FIRST_NODE_US
    for node in range(NODES):
        t.device_work(f"decode_layer_{node % 61}_kernel", ts, NODE_US, correlation=corr, ext=ext)
        ts += NODE_US + NODE_GAP_US
    replay_end = ts - NODE_GAP_US
    sync_start = start + LAUNCH_US + 40
    sync_end = replay_end + SYNC_TAIL_US
    t.x("cuda_runtime", "cudaStreamSynchronize", sync_start, sync_end - sync_start, correlation=20_000 + step)
    return start + LAUNCH_US, replay_end


def trace() -> RankTrace:
    t = RankTrace(rank=0)
    for step in range(STEPS):
        replay(t, step)
    return t


def build(folder: Path) -> Path:
    return trace().write(folder / "traces")


# Hand count: a replay is one launch, its delay is the first node's start minus the launch call's
# start. The device idles between nodes (1 µs each: queued by the replay, so launch latency, never
# sync although the host sits in cudaStreamSynchronize) and between steps: from the replay's end,
# the synchronize's last 5 µs (the host blocked, nothing queued: sync), then the host's own time
# until the next graph launch (host wait), then the 30 µs launch delay (launch latency).
DELAY_NS = round((FIRST_NODE_US - LAUNCH_US) * 1000)
KERNELS = STEPS * NODES
REPLAY_END_US = FIRST_NODE_US + NODES * (NODE_US + NODE_GAP_US) - NODE_GAP_US  # after the step's start
SYNC_NS = round((STEPS - 1) * SYNC_TAIL_US * 1000)
HOST_WAIT_NS = round((STEPS - 1) * (STEP_US + LAUNCH_US - REPLAY_END_US - SYNC_TAIL_US) * 1000)
LATENCY_NS = round((STEPS * (NODES - 1) * NODE_GAP_US + (STEPS - 1) * (FIRST_NODE_US - LAUNCH_US)) * 1000)

CASE = Case(
    name="graph_replay_decode",
    situation="one cudaGraphLaunch per decode step replays 2,200 kernels; the host waits for the replay",
    source="libkineto's CUPTI activities for graph kernels (correlation of the cudaGraphLaunch), torch's "
    "CUDAGraph.replay annotation",
    truth="hand count",
    build=build,
    numbers={
        "summary:kernel_launches[rank=0].ops": KERNELS,
        "summary:kernel_launches[rank=0].launched": STEPS,
        "summary:kernel_launches[rank=0].delay_p50_ns": DELAY_NS,
        "summary:kernel_launches[rank=0].delay_max_ns": DELAY_NS,
        "summary:idle_time[rank=0,stream=-1].sync_ns": SYNC_NS,
        "summary:idle_time[rank=0,stream=-1].host_wait_ns": HOST_WAIT_NS,
        "summary:idle_time[rank=0,stream=-1].launch_latency_ns": LATENCY_NS,
        "summary:idle_time[rank=0,stream=-1].other_ns": 0,
    },
    forbidden_findings=("sync_in_step", "device_starts_late"),
    forbidden_problems=("no_device_activity",),
)
