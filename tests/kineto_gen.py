"""Generated torch.profiler traces (Kineto JSON) of a training step, ingested the way users ingest.

The viewer's tests and benchmark run on what ingest writes: each rank is one session (a
``trace.json`` streamed event by event, a sealed ``trace_info.pb``, a memory snapshot) and
the profile tree goes through ``kinetoscope ingest``. A step has forward on the main thread
(Python frames, nested ``aten::`` ops), backward on the autograd thread, an all-reduce, an
optimizer step, an instant; every leaf op launches a runtime call whose kernel runs on a
device stream. Threads are named by ``thread_name`` metadata. ``Writer`` streams any trace
(``benchmarks/gen_multirank_trace.py`` uses it too), so large traces never sit in memory.

    PYTHONPATH=src python -m tests.kineto_gen OUT_DATASET --events 1000000 --ranks 8
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

BASE_NS = 1_760_000_000_000_000_000  # a realistic CLOCK_REALTIME start (2025)
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
EVENTS_PER_LAYER = 21  # events one forward and one backward layer add to a step
COMPUTE_STREAM, COMM_STREAM = 7, 13


class Writer:
    """Streams events into one Kineto JSON file (one event per line) after the document's head."""

    def __init__(self, handle: IO[str], head: dict[str, Any]) -> None:
        self.handle, self.first, self.count = handle, True, 0
        handle.write(json.dumps(head)[:-1] + (", " if head else "") + '"traceEvents": [\n')

    def event(self, event: dict[str, Any]) -> None:
        self.handle.write(("" if self.first else ",\n") + json.dumps(event))
        self.first = False
        self.count += 1

    def close(self) -> None:
        self.handle.write('\n], "traceName": "generated"}\n')


@dataclass(frozen=True, kw_only=True)
class TrainingSpec:
    """What to generate.

    Attributes:
        run: the run name the profile tree is ingested as.
        ranks: number of ranks; each is one process on its own device.
        steps: profiled steps per rank.
        layers: linear layers per step; each adds ``EVENTS_PER_LAYER`` events per step.
        hostile: add an op and a kernel whose names and args are HTML markup (for escaping tests).
        problems: the last rank dropped device events and has a truncated file; every rank notes
            "no accelerator" (for banner tests).
        python_depth: Python frames (as a trace recorded with stacks has: multiprocessing, threading,
            a library's layers) nested around each step on the main thread, each one lane.
    """

    run: str = "synthetic"
    ranks: int = 2
    steps: int = 3
    layers: int = 4
    hostile: bool = False
    problems: bool = True
    slow_kernel_us: float = 0.0  # added to the first forward GEMM of each step; every later event shifts
    reshaped_gemm_us: float = 0.0  # the first layer's GEMM at batch 128, slower by this; every later event shifts
    sync_us: float = 0.0  # a cudaDeviceSynchronize of this length after the forward pass of each step
    stall_us: float = 0.0  # a data-loader stall at the start of each step (host only)
    profiler_steps: bool = True  # False: no ProfilerStep#N rows (steps must be found otherwise)
    jitter: float = 0.0  # each step's times scaled by 1 + uniform(-jitter, jitter) (seeded by rank and step)
    seed: int = 0
    python_depth: int = 0

    @staticmethod
    def for_events(total: int, *, ranks: int = 8, steps: int = 60, **kwargs: Any) -> TrainingSpec:
        layers = max(1, total // (ranks * steps * EVENTS_PER_LAYER))
        return TrainingSpec(ranks=ranks, steps=steps, layers=layers, **kwargs)


class _Rank:
    """One rank's trace: time cursors, ids, and the allocations a snapshot will list."""

    def __init__(self, w: Writer, spec: TrainingSpec, rank: int) -> None:
        self.w, self.spec, self.rank = w, spec, rank
        self.pid = 4000 + 10 * rank
        self.main, self.bwd, self.device = self.pid, self.pid + 1, rank % 8
        self.ext = self.corr = 1
        self.stream_free: dict[int, float] = {}
        self.allocs: list[tuple[int, int, float, float]] = []  # addr, size, alloc µs, free µs
        self.scale = 1.0 + (0.15 if rank == spec.ranks - 1 else 0.0)  # the last rank is the straggler

    def x(self, cat: str, name: str, ts: float, dur: float, tid: int, **args: Any) -> None:
        self.w.event({"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": tid, "ts": round(ts, 3),
                      "dur": round(dur, 3), "args": args})

    def op(self, name: str, ts: float, dur: float, tid: int, cat: str = "cpu_op", **args: Any) -> int:
        ext, self.ext = self.ext, self.ext + 1
        self.x(cat, name, ts, dur, tid, **{"External id": ext, **args})
        return ext

    def launch(self, ext: int, ts: float, tid: int, kernel: str, dur: float, *, stream: int = COMPUTE_STREAM,
               call: str = "cudaLaunchKernel", cat: str = "kernel", **args: Any) -> None:
        corr, self.corr = self.corr, self.corr + 1
        self.x("cuda_runtime", call, ts, 4.0, tid, **{"External id": ext, "correlation": corr, "cbid": 211})
        start = max(ts + 9.0, self.stream_free.get(stream, 0.0))
        self.stream_free[stream] = start + dur + 1.0
        self.w.event({"ph": "X", "cat": cat, "name": kernel, "pid": self.device, "tid": stream, "ts": round(start, 3),
                      "dur": round(dur, 3), "args": {"External id": ext, "correlation": corr, "device": self.device,
                                                     "stream": stream, "context": 1, **args}})

    def memory(self, ts: float, addr: int, size: int, total: int) -> None:
        self.w.event({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": self.pid,
                      "tid": self.main, "ts": round(ts, 3),
                      "args": {"Addr": addr, "Bytes": size, "Total Allocated": total, "Total Reserved": 1 << 30,
                               "Device Id": self.device, "Device Type": 1}})

    def metadata(self) -> None:
        for tid, name in ((self.main, "python3"), (self.bwd, "pt_autograd_0")):
            self.w.event({"ph": "M", "name": "thread_name", "pid": self.pid, "tid": tid,
                          "args": {"name": f"thread {tid} ({name})"}})

    def counters(self, start: float, end: float) -> None:
        samples = 60
        for i in range(samples):
            ts = start + (end - start) * i / samples
            for cpu in range(4):
                value = 40 + 35 * math.sin(ts / 300 * (cpu + 1)) ** 2  # a few swings per trace
                self.w.event({"ph": "C", "name": f"CPU {cpu} utilisation (%)", "pid": self.pid, "tid": 0,
                              "ts": round(ts, 3), "args": {"value": round(value, 2)}})
            self.w.event({"ph": "C", "name": "CPU 10 utilisation (%)", "pid": self.pid, "tid": 0,  # an idle CPU
                          "ts": round(ts, 3), "args": {"value": 0}})

    def step_scale(self, number: int) -> float:
        """The rank's scale, with this step's jitter (seeded: the same spec writes the same trace)."""
        if not self.spec.jitter:
            return self.scale
        import random

        draw = random.Random(self.spec.seed * 100_003 + self.rank * 1009 + number)
        return self.scale * (1.0 + draw.uniform(-self.spec.jitter, self.spec.jitter))

    def step(self, number: int, start: float) -> float:  # noqa: PLR0915 - one step, top to bottom
        s, t = self.step_scale(number), start
        if self.spec.stall_us:
            self.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 1 * s, self.spec.stall_us,
                    self.main, cat="user_annotation")
            t += self.spec.stall_us
        self.w.event({"ph": "i", "cat": "user_annotation", "s": "t", "name": "Iteration Start: PyTorch Profiler",
                      "pid": self.pid, "tid": self.main, "ts": round(t + 2 * s, 3)})  # an instant
        frames: list[tuple[float, str]] = []
        to = self.op("aten::to", t + 5 * s, 30 * s, self.main)
        self.launch(to, t + 10 * s, self.main, "Memcpy HtoD (Pageable -> Device)", 12 * s, call="cudaMemcpyAsync",
                    cat="gpu_memcpy")
        cursor = t + 40 * s
        forward = cursor
        if self.spec.hostile:
            bad = self.op(HOSTILE_NAME, cursor, 6 * s, self.main, note="<script>alert(1)</script>",
                          **{"Input Dims": [[1]]})
            self.launch(bad, cursor + 1 * s, self.main, HOSTILE_NAME, 3 * s)
            cursor += 8 * s
        weights: list[tuple[int, int, float]] = []
        for i in range(self.spec.layers):
            frames.append((cursor, "torch/nn/modules/linear.py(125): forward"))
            self.x("python_function", "torch/nn/modules/linear.py(125): forward", cursor, 36 * s, self.main)
            rows = 128 if i == 0 and self.spec.reshaped_gemm_us else 64  # a larger batch through the first layer
            self.op("aten::linear", cursor + 2 * s, 20 * s, self.main, **{"Input Dims": [[rows, 4096], [4096, 4096]]})
            self.op("aten::t", cursor + 3 * s, 3 * s, self.main)
            addmm = self.op("aten::addmm", cursor + 7 * s, 14 * s, self.main, **{"Input Dims": [[rows, 4096]]})
            addr, size = 0x7F0000000000 + (number * 1000 + i) * 0x100000, (1 + i % 4) * 64 * 4096 * 4
            self.memory(cursor + 8 * s, addr, size, size * (i + 1))
            weights.append((addr, size, cursor + 8 * s))
            slow = self.spec.slow_kernel_us + self.spec.reshaped_gemm_us if i == 0 else 0.0
            self.launch(addmm, cursor + 12 * s, self.main, "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32",
                        24 * s + slow)
            cursor += slow  # the events after it, on every track, shifted by the added time
            relu = self.op("aten::relu", cursor + 24 * s, 10 * s, self.main)
            self.launch(relu, cursor + 27 * s, self.main, "vectorized_elementwise_kernel<relu>", 5 * s)
            cursor += 38 * s
        self.x("python_function", "model.py(40): forward", forward - 1 * s, cursor - forward + 1 * s, self.main)
        if self.spec.sync_us:  # the host waits for the device's queue to drain
            wait = max(self.spec.sync_us, self.stream_free.get(COMPUTE_STREAM, cursor) - cursor)
            self.x("cuda_runtime", "cudaDeviceSynchronize", cursor, wait, self.main, cbid=165, correlation=0)
            cursor += wait
        backward = cursor + 10 * s
        ar = self.op("nccl:all_reduce", backward, 12 * s, self.main, cat="user_annotation")
        meta = {"Collective name": "allreduce", "Process Group Name": "0", "Seq": number, "In msg nelems": 1 << 20,
                "dtype": "Float", "Group size": self.spec.ranks}
        self.launch(ar, backward + 5 * s, self.main, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                    max(40.0, 50.0 * self.spec.layers) * s, stream=COMM_STREAM, **meta)
        cursor = backward
        for i in reversed(range(self.spec.layers)):
            cursor += 2 * s
            self.op("autograd::engine::evaluate_function: AddmmBackward0", cursor, 60 * s, self.bwd)
            self.op("AddmmBackward0", cursor + 2 * s, 56 * s, self.bwd)
            for k in range(2):
                mm = self.op("aten::mm", cursor + (5 + 26 * k) * s, 22 * s, self.bwd)
                self.launch(mm, cursor + (10 + 26 * k) * s, self.bwd,
                            "sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize64x64x32", 18 * s)
            addr, size, at = weights[i]
            self.allocs.append((addr, size, at, cursor + 58 * s))
            self.memory(cursor + 58 * s, addr, -size, 0)
            cursor += 64 * s
        self.op("Optimizer.step#SGD.step", cursor + 5 * s, 40 * s, self.main, cat="user_annotation")
        foreach = self.op("aten::_foreach_add_", cursor + 10 * s, 30 * s, self.main)
        self.launch(foreach, cursor + 20 * s, self.main, "multi_tensor_apply_kernel", 15 * s)
        end = max(cursor + 60 * s, *self.stream_free.values())
        if self.spec.profiler_steps:
            self.op(f"ProfilerStep#{number}", start, end - start, self.main, cat="user_annotation")
        self.x("python_function", "train.py(61): train_step", start + 0.5 * s, end - start - 1 * s, self.main)
        for depth in range(self.spec.python_depth):  # each frame 1 ns wider than the one inside it
            pad = (depth + 1) * 0.001
            self.x("python_function", f"multiprocessing/spawn.py({depth}): _main", start + 0.5 * s - pad,
                   end - start - 1 * s + 2 * pad, self.main)
        return end + 200 * s


def _snapshot(rank: _Rank) -> dict[str, Any]:
    """A memory snapshot of the rank's activations: each allocated in forward, freed in backward."""
    frames = [{"filename": "torch/nn/modules/linear.py", "line": 125, "name": "forward"},
              {"filename": "model.py", "line": 40, "name": "forward"},
              {"filename": "train.py", "line": 61, "name": "train_step"}]
    trace: list[dict[str, Any]] = []
    for addr, size, alloc_us, free_us in rank.allocs:
        trace.append({"action": "alloc", "addr": addr, "size": size, "time_us": BASE_NS // 1000 + int(alloc_us),
                      "frames": frames})
        trace.append({"action": "free_completed", "addr": addr, "size": size, "time_us": BASE_NS // 1000 + int(free_us),
                      "frames": frames})
    # the weights: allocated before recording began, still allocated at export
    build = [{"filename": "model.py", "line": 12, "name": "build_model"}]
    blocks = [{"address": 0x7E0000000000 + i * 0x100000, "size": 1 << 20, "requested_size": 1 << 20,
               "state": "active_allocated", "frames": build} for i in range(rank.spec.layers)]
    return {"segments": [{"device": rank.device, "blocks": blocks}],
            "device_traces": [[] for _ in range(rank.device)] + [trace]}


def write_rank(profile: Path, spec: TrainingSpec, rank: int) -> Path:
    """The session of one rank under ``profile``; returns its directory."""
    pid = 4000 + 10 * rank
    session = layout.session_path(profile, "synthetic-host", pid, BASE_NS, 0)
    session.mkdir(parents=True)
    with open(session / layout.TRACE_JSON, "w") as handle:
        w = Writer(handle, {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS,
                            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": spec.ranks}})
        state = _Rank(w, spec, rank)
        state.metadata()
        t = start = rank * 7.0  # µs after baseTimeNanoseconds, as Kineto writes them
        for number in range(spec.steps):
            t = state.step(number, t)
        state.counters(start, t)
        w.close()
    (session / f"memory_snapshot_rank{rank}.pickle").write_bytes(pickle.dumps(_snapshot(state), protocol=4))
    last = spec.problems and rank == spec.ranks - 1
    if last:
        (session / "host_mem.pb").write_bytes(b"\x0a\x80\x01" + b"\x00" * 20)  # cut inside its first packet
    edit = _problems if last else _note if spec.problems else None
    _seal(session, spec, rank, pid, start_ns=BASE_NS + int(start * 1000), stop_ns=BASE_NS + int(t * 1000), edit=edit,
          state=state)
    return session


def _note(info: Any, state: _Rank) -> None:
    info.modes.add(mode=ti.Mode.MODE_DEVICE, reason="no accelerator on this host: torch sees no CUDA or other "
                                                    "device, so there are no device executions")


def _problems(info: Any, state: _Rank) -> None:
    _note(info, state)
    info.drops.add(device=state.device, kept=50_000, total=51_234)
    for entry in info.files:
        if entry.name == "host_mem.pb":
            entry.size_bytes = 4096


def _seal(session: Path, spec: TrainingSpec, rank: int, pid: int, *, start_ns: int, stop_ns: int,
          edit: Callable[[Any, _Rank], None] | None, state: _Rank) -> None:
    info = ti.new_trace_info()
    info.state = ti.SessionState.SESSION_STATE_COMPLETE
    ident = info.identity
    ident.session_id = f"{session.parent.name}/{session.name}"
    ident.instance_id, ident.hostname, ident.pid = "synthetic-host", "synthetic-host", pid
    ident.rank, ident.world_size, ident.rank_known, ident.local_rank = rank, spec.ranks, True, rank
    ident.backend = "nccl"
    info.profiler_base_time_ns = BASE_NS
    info.start_clocks.realtime_ns, info.stop_clocks.realtime_ns = start_ns, stop_ns
    info.files.extend(ti.build_manifest(session))
    if edit is not None:
        edit(info, state)
    ti.write_trace_info(session, info)


def write_profile(profile: Path, spec: TrainingSpec) -> list[Path]:
    """One session per rank under ``profile``."""
    return [write_rank(profile, spec, rank) for rank in range(spec.ranks)]


def write_dataset(out: Path, spec: TrainingSpec, *, profile: Path | None = None) -> Path:
    """Writes the profile tree (next to ``out`` unless given) and ingests it into ``out``; returns ``out``."""
    from kinetoscope.ingest import IngestOptions, ingest

    profile = profile or out.with_name(out.name + "-profile") / spec.run
    write_profile(profile, spec)
    report = ingest(IngestOptions(profile_dir=profile, out=out, run=spec.run, jobs=1))
    problems = [o for o in report.outcomes if o.status == "failed"]
    if problems:
        raise RuntimeError(f"ingest failed: {problems}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the dataset to write (its profile tree goes next to it)")
    parser.add_argument("--events", type=int, default=100_000, help="about how many events (default 100000)")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    write_dataset(args.out, TrainingSpec.for_events(args.events, ranks=args.ranks, steps=args.steps))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
