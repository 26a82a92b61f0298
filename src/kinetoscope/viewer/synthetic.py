"""Synthetic datasets in the dataset layout, for the viewer's tests and its 10-million-event benchmark.

A training step is laid out once as a template (forward on the main thread, backward on the
autograd thread, a collective overlapping backward, an optimizer step; every leaf op launches a
runtime call that runs a kernel on a device stream) and tiled over steps with numpy, so ten
million events take seconds to write. Counters, allocations, frames, flows, sessions, files and
warnings follow the same shape, so every viewer page has something real to show.

    python -m kinetoscope.viewer.synthetic OUT_DIR --events 10000000 --ranks 8
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kinetoscope.ingest.schema import SCHEMA_VERSION
from kinetoscope.model import kinds

US = 1_000
BASE_EPOCH_NS = 1_760_000_000_000_000_000  # a realistic CLOCK_REALTIME start (2025)
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
EVENTS_PER_LAYER = 17


@dataclass(frozen=True, kw_only=True)
class SyntheticSpec:
    """What to generate.

    Attributes:
        run: the run name (partition value).
        ranks: number of ranks; each is one process on its own device.
        steps: profiled steps per rank.
        layers: linear layers per step; each adds 17 events per step.
        hostile: add an op whose name and args are HTML markup (for escaping tests).
        problems: add a dropped-events warning, a truncated file and a note per rank (for banner tests).
    """

    run: str = "synthetic"
    ranks: int = 2
    steps: int = 3
    layers: int = 4
    hostile: bool = False
    problems: bool = True

    @staticmethod
    def for_events(total: int, *, ranks: int = 8, steps: int = 60, **kwargs: object) -> SyntheticSpec:
        layers = max(1, total // (ranks * steps * EVENTS_PER_LAYER))
        return SyntheticSpec(ranks=ranks, steps=steps, layers=layers, **kwargs)  # type: ignore[arg-type]


@dataclass
class _Template:
    """One step's events, relative to the step start (ns), before tiling."""

    names: list[str] = field(default_factory=list)
    rows: list[tuple[int, str, str, int, int, str, int, int, int, int]] = field(default_factory=list)
    flows: list[tuple[int, int, str]] = field(default_factory=list)
    stream_free_ns: dict[int, int] = field(default_factory=dict)

    def add(self, layer: str, name: str, cat: str, ts_ns: int, dur_ns: int, *, thread: str = "main",
            stream: int = -1, depth: int = 0, stack: int = -1, link: int = -1) -> int:
        if name not in self.names:
            self.names.append(name)
        index = len(self.rows)
        self.rows.append((self.names.index(name), layer, cat, ts_ns, dur_ns, thread, stream, depth, stack, link))
        return index

    def launch(self, op: int, name: str, ts_ns: int, kernel_dur_ns: int, *, stream: int = 7,
               cat: str = "kernel") -> None:
        """A runtime call inside op `op`, and the kernel it runs on `stream`."""
        call = self.add("runtime", "cudaLaunchKernel", "cuda_runtime", ts_ns, 4 * US, link=op)
        start = max(ts_ns + 9 * US, self.stream_free_ns.get(stream, 0))
        self.stream_free_ns[stream] = start + kernel_dur_ns + 1 * US
        self.add("device", name, cat, start, kernel_dur_ns, thread="device", stream=stream, link=call)
        self.flows.append((op, call, "framework_runtime"))
        self.flows.append((call, len(self.rows) - 1, "runtime_device"))


def _forward_layer(t: _Template, i: int, cursor: int) -> int:
    start = cursor
    module = t.add("framework", f"nn.Module: Linear_{i % 24}", "python_function", start, 0, depth=1, stack=2)
    linear = t.add("framework", "aten::linear", "cpu_op", start + 2 * US, 0, depth=2, stack=3)
    t.add("framework", "aten::t", "cpu_op", start + 3 * US, 3 * US, depth=3)
    addmm = t.add("framework", "aten::addmm", "cpu_op", start + 7 * US, 14 * US, depth=3, stack=3)
    t.launch(addmm, "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32", start + 12 * US, 24 * US)
    relu = t.add("framework", "aten::relu", "cpu_op", start + 24 * US, 10 * US, depth=2)
    t.launch(relu, "vectorized_elementwise_kernel<relu>", start + 27 * US, 5 * US)
    t.rows[linear] = (*t.rows[linear][:4], 20 * US, *t.rows[linear][5:])
    t.rows[module] = (*t.rows[module][:4], 36 * US, *t.rows[module][5:])
    return start + 38 * US


def _backward_layer(t: _Template, i: int, cursor: int) -> int:
    start = cursor
    t.add("framework", "autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", start, 60 * US,
          thread="bwd")
    t.add("framework", "AddmmBackward0", "cpu_op", start + 2 * US, 56 * US, thread="bwd", depth=1)
    for k in range(2):
        mm = t.add("framework", "aten::mm", "cpu_op", start + (5 + 26 * k) * US, 22 * US, thread="bwd", depth=2)
        t.launch(mm, "sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize64x64x32", start + (10 + 26 * k) * US, 18 * US)
    return start + 64 * US


def build_template(spec: SyntheticSpec) -> tuple[_Template, int]:
    """The events of one step and the step's length in ns."""
    t = _Template()
    step = t.add("framework", "ProfilerStep#", "user_annotation", 0, 0, stack=0)
    t.add("framework", "Iteration Start: PyTorch Profiler", "user_annotation", 2 * US, 0, depth=1)  # an instant
    to = t.add("framework", "aten::to", "cpu_op", 5 * US, 30 * US, depth=1, stack=1)
    call = t.add("runtime", "cudaMemcpyAsync", "cuda_runtime", 10 * US, 20 * US, link=to)
    t.add("device", "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 14 * US, 12 * US, thread="device",
          stream=7, link=call)
    t.flows += [(to, call, "framework_runtime"), (call, call + 1, "runtime_device")]
    t.stream_free_ns[7] = 30 * US
    cursor = 40 * US
    if spec.hostile:
        bad = t.add("framework", HOSTILE_NAME, "cpu_op", cursor, 6 * US, depth=1)
        t.launch(bad, HOSTILE_NAME, cursor + 1 * US, 3 * US)
        cursor += 8 * US
    for i in range(spec.layers):
        cursor = _forward_layer(t, i, cursor)
    backward_start = cursor + 10 * US
    ar = t.add("framework", "nccl:all_reduce", "user_annotation", backward_start, 12 * US, depth=1)
    t.launch(ar, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", backward_start + 5 * US,
             max(40 * US, 50 * US * spec.layers), stream=13)
    cursor = backward_start
    for i in reversed(range(spec.layers)):
        cursor = _backward_layer(t, i, cursor + 2 * US)
    opt = t.add("framework", "Optimizer.step#SGD.step", "user_annotation", cursor + 5 * US, 40 * US, depth=1)
    foreach = t.add("framework", "aten::_foreach_add_", "cpu_op", cursor + 10 * US, 30 * US, depth=2)
    t.launch(foreach, "multi_tensor_apply_kernel", cursor + 20 * US, 15 * US)
    del opt
    length = max(cursor + 60 * US, *(v for v in t.stream_free_ns.values()))
    t.rows[step] = (*t.rows[step][:4], length, *t.rows[step][5:])
    return t, length + 200 * US


def _dictionary(indices: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32)), pa.array(values, pa.string()))


class _RankWriter:
    """Tiles the template over steps for one rank and writes every partitioned table."""

    def __init__(self, out: Path, spec: SyntheticSpec, rank: int, template: _Template, step_len_ns: int) -> None:
        self.out, self.spec, self.rank, self.t = out, spec, rank, template
        self.pid = 4000 + 10 * rank
        self.session = f"synthetic-host_pid_{self.pid}/20250101T000000"
        rng = np.random.default_rng(rank)
        self.scale = 1.0 + 0.05 * rng.random(spec.steps) + (0.15 if rank == spec.ranks - 1 else 0.0)
        lengths = (step_len_ns * self.scale).astype(np.int64)
        self.step_start = BASE_EPOCH_NS + rank * 7 * US + np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.end_ns = int(self.step_start[-1] + lengths[-1])

    def _part(self, table: str) -> Path:
        folder = self.out / table / f"run={self.spec.run}" / f"rank={self.rank}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / "part-0.parquet"

    def write(self) -> int:
        count = self._events()
        self._flows()
        self._counters()
        self._allocations()
        self._frames()
        return count

    def _tiled(self, column: int) -> np.ndarray:
        return np.tile(np.array([row[column] for row in self.t.rows], dtype=np.int64), self.spec.steps)

    def _events(self) -> int:
        e, s = len(self.t.rows), self.spec.steps
        step_of = np.repeat(np.arange(s), e)
        scale = self.scale[step_of]
        ts = self.step_start[step_of] + (self._tiled(3) * scale).astype(np.int64)
        dur = (self._tiled(4) * scale).astype(np.int64)
        names = [*self.t.names, *(f"ProfilerStep#{k}" for k in range(s))]
        name_idx = self._tiled(0)
        name_idx[0::e] = len(self.t.names) + np.arange(s)
        layers, cats, threads = (np.array([r[c] for r in self.t.rows]) for c in (1, 2, 5))
        layer_of, cat_of, thread_of = np.tile(layers, s), np.tile(cats, s), np.tile(threads, s)
        device = self.rank % 8
        tid = np.where(thread_of == "bwd", self.pid + 1, np.where(thread_of == "device", -1, self.pid))
        index = np.arange(e * s, dtype=np.int64)
        link = self._tiled(9)
        corr = np.where(layer_of == "runtime", index, np.where(layer_of == "device", link + step_of * e, -1))
        ext = np.where(layer_of == "framework", index, np.where(layer_of == "runtime", link + step_of * e, -1))
        args = [json.dumps({"External id": 1, "Sequence number": 7, "Input Dims": [[64, 4096]]})]
        if self.spec.hostile:
            args.append(json.dumps({"note": "<script>alert(1)</script>", "Input Dims": [[1]]}))
        arg_idx = np.where(np.array([n == HOSTILE_NAME for n in names])[name_idx], len(args) - 1, 0)
        table = pa.table({
            "id": (self.rank << 40) | index,
            "session": _dictionary(np.zeros(e * s), [self.session]),
            "layer": _dictionary(np.searchsorted(["device", "framework", "runtime"], layer_of),
                                 ["device", "framework", "runtime"]),
            "name": _dictionary(name_idx, names),
            "category": _dictionary(np.unique(cat_of, return_inverse=True)[1], sorted(set(cat_of.tolist()))),
            "kind": pa.array([kinds.CATEGORIES.get(c, kinds.UNKNOWN)[1] for c in cat_of.tolist()]).dictionary_encode(),
            "ts_ns": ts, "dur_ns": dur, "pid": np.full(e * s, self.pid, np.int64), "tid": tid.astype(np.int64),
            "device": np.where(layer_of == "framework", -1, device).astype(np.int32),
            "stream": self._tiled(6), "correlation": corr, "external_id": ext,
            "collective": _dictionary(np.array([("AllReduce" in n) for n in names])[name_idx] & (layer_of == "device"),
                                      ["", "allreduce"]),
            "stack_id": self._tiled(8), "depth": self._tiled(7).astype(np.int32),
            "args": _dictionary(arg_idx, args),
        })
        pq.write_table(table.sort_by("ts_ns"), self._part("events"))
        return e * s

    def _flows(self) -> None:
        e, s = len(self.t.rows), self.spec.steps
        src = np.array([f[0] for f in self.t.flows], np.int64)
        dst = np.array([f[1] for f in self.t.flows], np.int64)
        offsets = np.repeat(np.arange(s, dtype=np.int64) * e, len(src))
        kinds = [f[2] for f in self.t.flows] * s
        pq.write_table(pa.table({
            "src_id": (self.rank << 40) | (np.tile(src, s) + offsets),
            "dst_id": (self.rank << 40) | (np.tile(dst, s) + offsets),
            "kind": pa.array(kinds).dictionary_encode(),
        }), self._part("flows"))

    def _counters(self) -> None:
        start = int(self.step_start[0])
        interval_ns = int(min(max((self.end_ns - start) / 500, 50 * US), 10_000_000))
        ts = np.arange(start, self.end_ns, interval_ns, dtype=np.int64)
        phase = (ts - start) / 1e9
        series = [(f"CPU {c} utilisation (%)", "%", -1, 40 + 35 * np.sin(phase * (c + 1) * 3) ** 2) for c in range(4)]
        series.append(("CPU 10 utilisation (%)", "%", -1, np.zeros(len(ts))))  # an idle CPU: all zero
        series.append(("host memory used", "bytes", -1, 8e9 + 2e8 * np.sin(phase)))
        series.append(("process resident memory", "bytes", -1, 2.5e9 + 1e8 * phase / max(phase[-1], 1e-9)))
        steps = np.searchsorted(self.step_start, ts, side="right") - 1
        within = (ts - self.step_start[np.maximum(steps, 0)]) / (self.end_ns - start) * self.spec.steps
        device = self.rank % 8
        series.append((f"device {device} memory allocated", "bytes", device, 1e9 + 3e9 * np.clip(within, 0, 1)))
        pq.write_table(pa.table({
            "session": [self.session] * (len(ts) * len(series)),
            "name": [n for n, *_ in series for _ in ts],
            "ts_ns": np.tile(ts, len(series)),
            "value": np.concatenate([v for *_, v in series]).astype(np.float64),
            "unit": [u for _, u, *_ in series for _ in ts],
            "device": np.repeat(np.array([d for _, _, d, _ in series], np.int32), len(ts)),
        }), self._part("counters"))

    def _allocations(self) -> None:
        forward = [i for i, r in enumerate(self.t.rows) if self.t.names[r[0]] == "aten::addmm"]
        backward = [i for i, r in enumerate(self.t.rows) if self.t.names[r[0]] == "AddmmBackward0"][::-1]
        rows_alloc, rows_free, sizes = [], [], []
        for step in range(self.spec.steps):
            for k, (fi, bi) in enumerate(zip(forward, backward, strict=False)):
                scale = self.scale[step]
                rows_alloc.append(self.step_start[step] + int(self.t.rows[fi][3] * scale) + 1000)
                rows_free.append(self.step_start[step] + int((self.t.rows[bi][3] + self.t.rows[bi][4]) * scale))
                sizes.append((1 + k % 4) * 64 * 4096 * 4)
        weights = len(forward)
        alloc_ts = np.concatenate([np.full(weights, self.step_start[0] - 1000), np.array(rows_alloc, np.int64)])
        free_ts = np.concatenate([np.full(weights, -1), np.array(rows_free, np.int64)])
        size = np.concatenate([np.full(weights, 1024 * 1024), np.array(sizes, np.int64)])
        n = len(alloc_ts)
        pq.write_table(pa.table({
            "session": [self.session] * n,
            "addr": 0x7F0000000000 + np.arange(n, dtype=np.int64) * 0x100000,
            "size_bytes": size.astype(np.int64), "alloc_ts_ns": alloc_ts.astype(np.int64),
            "free_ts_ns": free_ts.astype(np.int64), "device": np.full(n, self.rank % 8, np.int32),
            "stack_id": np.where(np.arange(n) < weights, 4, 3).astype(np.int64),
            "event_id": np.full(n, -1, np.int64),
        }), self._part("allocations"))

    def _frames(self) -> None:
        frames = [
            (0, -1, "main", "train.py", 88), (1, 0, "train_step", "train.py", 61),
            (2, 1, "forward", "model.py", 40), (3, 2, "forward", "torch/nn/modules/linear.py", 125),
            (4, 0, "build_model", "model.py", 12),
        ]
        pq.write_table(pa.table({
            "stack_id": [f[0] for f in frames], "parent_id": [f[1] for f in frames],
            "name": [f[2] for f in frames], "file": [f[3] for f in frames],
            "line": pa.array([f[4] for f in frames], pa.int32()),
        }), self._part("frames"))


def _small_tables(out: Path, spec: SyntheticSpec, writers: list[_RankWriter]) -> None:
    def write(table: str, rows: list[dict[str, object]]) -> None:
        (out / table).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), out / table / "part-0.parquet")

    base = {"run": spec.run}
    write("sessions", [{**base, "rank": w.rank, "session": w.session, "path": f"profile/{w.session}",
                        "instance": "synthetic-host", "host": "synthetic-host", "pid": w.pid, "local_rank": w.rank,
                        "world_size": spec.ranks, "backend": "nccl", "state": "COMPLETE",
                        "start_ns": int(w.step_start[0]), "stop_ns": w.end_ns,
                        "modes": "DEVICE,RUNTIME,CPU_UTIL,HOST_MEMORY", "torch_version": "2.13.0",
                        "kinetoscope_version": "0.1.0"} for w in writers])
    names = ("trace.json", "ntrace.pb", "cpu_util.pb", "host_mem.pb")
    files: list[dict[str, object]] = [
        {**base, "rank": w.rank, "session": w.session, "name": name, "size_bytes": 1000, "sha256": "0" * 64,
         "status": "ok"} for w in writers for name in names]
    warnings: list[dict[str, object]] = [{**base, "rank": 0, "session": writers[0].session, "file": "trace.json",
                                          "where": "schema", "kind": "info", "severity": "note",
                                          "message": "synthetic dataset",
                                          "count": 0}]
    if spec.problems:
        warnings += [{**base, "rank": w.rank, "session": w.session, "file": "", "where": "DEVICE",
                      "kind": "mode_outcome", "severity": "note", "count": 0,
                      "message": "no accelerator on this host: torch sees no CUDA or other device, so there are no "
                                 "device executions"} for w in writers]
        last = writers[-1]
        files[-1]["status"] = "truncated"
        warnings += [
            {**base, "rank": last.rank, "session": last.session, "file": f"device_{last.rank % 8}.pb",
             "where": "device", "kind": "dropped_events", "severity": "warning",
             "message": "1,234 of 51,234 device events dropped (max_events_per_device=50000); raise the cap, "
                        "shorten the window or filter devices", "count": 1234},
            {**base, "rank": last.rank, "session": last.session, "file": "host_mem.pb", "where": "byte 4096",
             "kind": "truncated", "severity": "warning", "message": "file ends inside a packet; 3 samples lost",
             "count": 3},
        ]
    write("files", files)
    write("warnings", warnings)
    write("schema", [{"table": "events", "column": "ts_ns", "type": "int64", "unit": "ns",
                      "description": "start, CLOCK_REALTIME epoch ns"}])


def write_dataset(out: Path, spec: SyntheticSpec) -> int:
    """Writes a dataset for `spec` into `out`; returns the number of events."""
    out.mkdir(parents=True, exist_ok=True)
    template, step_len_ns = build_template(spec)
    writers = [_RankWriter(out, spec, rank, template, step_len_ns) for rank in range(spec.ranks)]
    total = sum(w.write() for w in writers)
    _small_tables(out, spec, writers)
    meta = {"schema_version": SCHEMA_VERSION, "runs": [spec.run], "created_by": "kinetoscope synthetic"}
    (out / "_dataset.json").write_text(json.dumps(meta))
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=100_000, help="about how many events (default 100000)")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    total = write_dataset(args.out, SyntheticSpec.for_events(args.events, ranks=args.ranks, steps=args.steps))
    print(f"wrote {total:,} events to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
