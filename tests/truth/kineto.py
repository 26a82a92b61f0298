"""A small writer of Kineto JSON traces for the labelled cases, keeping the events for hand counts.

The shapes follow what torch.profiler and libkineto write (``output_json.cpp``,
``torch/csrc/profiler``): a document with ``schemaVersion``, ``deviceProperties``,
``distributedInfo`` and ``baseTimeNanoseconds``; ``X`` slices with ``ts``/``dur`` in µs after
the base time; framework ops (``cpu_op``) with an ``External id``; runtime calls
(``cuda_runtime``) and the device work they launched (``kernel``, ``gpu_memcpy``) sharing a
``correlation`` id, device work on pid = device, tid = stream. A collective is torch's nesting:
``c10d::allreduce_`` > ``record_param_comms`` (with the ``Collective name``, ``Process Group
Name``, ``Seq``, ... args of ``ParamCommsUtils``) > ``nccl:all_reduce`` > ``cudaLaunchKernel``,
and libkineto copies the collective args onto the NCCL kernel.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASE_NS = 1_760_000_000_000_000_000  # a realistic CLOCK_REALTIME (2025)
COMPUTE_STREAM, COMM_STREAM = 7, 20


@dataclass
class RankTrace:
    """One rank's events, in µs after ``base_ns``."""

    rank: int = 0
    world_size: int = 1
    backend: str = "nccl"
    base_ns: int = BASE_NS
    pid: int = 0
    device: int | None = 0  # None: a CPU-only trace (no deviceProperties)
    host: str = ""  # written as the document's ``hostname`` (what ``kinetoscope import`` reads), if any
    events: list[dict[str, Any]] = field(default_factory=list)
    _ext: int = 1
    _corr: int = 1

    def __post_init__(self) -> None:
        self.pid = self.pid or 1000 + self.rank
        if self.device is None:
            return
        self.device = self.device if self.device else self.rank

    @property
    def main_tid(self) -> int:
        return self.pid

    def x(self, cat: str, name: str, ts: float, dur: float, *, pid: int | None = None, tid: int | None = None,
          **args: Any) -> dict[str, Any]:
        event = {"ph": "X", "cat": cat, "name": name, "pid": self.pid if pid is None else pid,
                 "tid": self.main_tid if tid is None else tid, "ts": ts, "dur": dur, "args": args}
        self.events.append(event)
        return event

    def op(self, name: str, ts: float, dur: float, *, cat: str = "cpu_op", tid: int | None = None,
           **args: Any) -> int:
        """A framework op (or ``user_annotation`` with ``cat=``); returns its External id."""
        ext, self._ext = self._ext, self._ext + 1
        self.x(cat, name, ts, dur, tid=tid, **{"External id": ext, **args})
        return ext

    def device_work(self, name: str, ts: float, dur: float, *, stream: int = COMPUTE_STREAM, cat: str = "kernel",
                    correlation: int | None = None, ext: int | None = None, **args: Any) -> dict[str, Any]:
        """Device work on this rank's device; with ``correlation`` None, one nobody launched in the trace."""
        assert self.device is not None, "a CPU-only trace has no device work"
        given: dict[str, Any] = {"device": self.device, "stream": stream, "context": 1}
        if correlation is not None:
            given["correlation"] = correlation
        if ext is not None:
            given["External id"] = ext
        return self.x(cat, name, ts, dur, pid=self.device, tid=stream, **given, **args)

    def launch(self, ext: int, ts: float, kernel: str, kernel_ts: float, kernel_dur: float, *,
               call: str = "cudaLaunchKernel", stream: int = COMPUTE_STREAM, cat: str = "kernel",
               tid: int | None = None, **kernel_args: Any) -> dict[str, Any]:
        """A runtime call at ``ts`` (4 µs) launching ``kernel``; returns the device event."""
        corr, self._corr = self._corr, self._corr + 1
        self.x("cuda_runtime", call, ts, 4.0, tid=tid, **{"External id": ext, "correlation": corr, "cbid": 211})
        return self.device_work(kernel, kernel_ts, kernel_dur, stream=stream, cat=cat, correlation=corr, ext=ext,
                                **kernel_args)

    def step(self, number: int, ts: float, dur: float) -> int:
        return self.op(f"ProfilerStep#{number}", ts, dur, cat="user_annotation")

    def document(self) -> dict[str, Any]:
        head: dict[str, Any] = {"schemaVersion": 1, "baseTimeNanoseconds": self.base_ns}
        if self.device is not None:
            head["deviceProperties"] = [{"id": self.device, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem":
                                         85_000_000_000, "computeMajor": 9, "computeMinor": 0}]
        if self.host:
            head["hostname"] = self.host
        if self.world_size > 1:
            head["distributedInfo"] = {"backend": self.backend, "rank": self.rank, "world_size": self.world_size}
        metadata = [{"ph": "M", "name": "process_name", "pid": self.pid, "tid": 0, "args": {"name": "python"}},
                    {"ph": "M", "name": "thread_name", "pid": self.pid, "tid": self.main_tid,
                     "args": {"name": "thread 1 (python)"}}]
        return {**head, "traceEvents": metadata + self.events, "traceName": f"rank{self.rank}.pt.trace.json"}

    def write(self, folder: Path, name: str | None = None, *, gz: bool = False) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (name or f"rank{self.rank}.{self.pid}.pt.trace.json") if not gz else folder / (
            name or f"rank{self.rank}.{self.pid}.pt.trace.json.gz")
        text = json.dumps(self.document())
        if gz:
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        return path

    def kernels(self) -> list[dict[str, Any]]:
        """The device work written so far (for hand counts)."""
        return [e for e in self.events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]


def collective_args(collective: str, group: str, *, nelems: int, dtype: str = "Float", group_size: int,
                    seq: int | None = None, ranks: list[int] | None = None) -> dict[str, Any]:
    """The args torch's ``record_param_comms`` records (``ParamCommsUtils``; ``Seq`` since torch 2.2)."""
    args: dict[str, Any] = {"Collective name": collective, "In msg nelems": nelems, "Out msg nelems": nelems,
                            "Group size": group_size, "dtype": dtype, "In split size": "[]",
                            "Out split size": "[]", "Process Group Name": group,
                            "Process Group Description": "default_pg" if group == "0" else "undefined",
                            "Process Group Ranks": str(ranks if ranks is not None else list(range(group_size)))}
    if seq is not None:
        args["Seq"] = seq
    return args


def nccl_allreduce(trace: RankTrace, ts: float, kernel_ts: float, kernel_dur: float, *, group: str = "0",
                   nelems: int = 1 << 20, seq: int | None = None, copy_seq: bool = True,
                   kernel: str = "ncclDevKernel_AllReduce_Sum_f32_RING_LL") -> dict[str, Any]:
    """torch's all-reduce on NCCL: ``c10d::allreduce_`` > ``record_param_comms`` > ``nccl:all_reduce``
    > ``cudaLaunchKernel``, the kernel on the communication stream with the collective args copied
    onto it (``Seq`` too when ``copy_seq``). Returns the kernel event."""
    meta = collective_args("allreduce", group, nelems=nelems, group_size=trace.world_size, seq=seq)
    outer = trace.op("c10d::allreduce_", ts, 30.0)
    trace.op("record_param_comms", ts + 2.0, 26.0, **meta)
    inner = trace.op("nccl:all_reduce", ts + 4.0, 20.0, cat="user_annotation")
    del outer
    kernel_meta = dict(meta) if copy_seq else {k: v for k, v in meta.items() if k != "Seq"}
    return trace.launch(inner, ts + 8.0, kernel, kernel_ts, kernel_dur, stream=COMM_STREAM, **kernel_meta)


def gloo_allreduce(trace: RankTrace, ts: float, dur: float, *, group: str = "0", nelems: int = 1 << 18,
                   seq: int | None = None) -> dict[str, Any]:
    """torch's all-reduce on gloo (a CPU rank): ``c10d::allreduce_`` > ``record_param_comms`` (the
    collective args) > ``gloo:all_reduce`` (a ``user_annotation``, as in HTA's public CPU trace),
    the annotation from ``ts`` for ``dur`` µs. Returns the annotation."""
    meta = collective_args("allreduce", group, nelems=nelems, group_size=trace.world_size, seq=seq)
    trace.op("c10d::allreduce_", ts - 3.0, dur + 6.0)
    trace.op("record_param_comms", ts - 2.0, dur + 4.0, **meta)
    shapes: dict[str, Any] = {"Input type": ["float"], "Input Dims": [[nelems]]}
    trace.op("gloo:all_reduce", ts, dur, cat="user_annotation", **shapes)
    return trace.events[-1]


def nccl_collective(trace: RankTrace, ts: float, kernel_ts: float, kernel_dur: float, *, collective: str,
                    kernel: str, group: str = "0", nelems: int = 1 << 20, seq: int | None = None,
                    annotation: str = "") -> dict[str, Any]:
    """Any NCCL collective with its args copied onto the kernel (``Seq`` when given)."""
    meta = collective_args(collective, group, nelems=nelems, group_size=trace.world_size, seq=seq)
    trace.op("record_param_comms", ts, 26.0, **meta)
    inner = trace.op(annotation or f"nccl:{collective}", ts + 2.0, 20.0, cat="user_annotation")
    return trace.launch(inner, ts + 6.0, kernel, kernel_ts, kernel_dur, stream=COMM_STREAM, **meta)


def write_traces(folder: Path, traces: list[RankTrace]) -> Path:
    """Each rank's trace into ``folder/traces``; that folder, to give to kinetoscope."""
    for trace in traces:
        trace.write(folder / "traces")
    return folder / "traces"
