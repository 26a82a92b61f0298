"""Synthetic torch.profiler traces of a given size, in Kineto's own layout, for the import benchmarks.

Each step has the events a CUDA training step has: an operator, the runtime launch it makes,
the kernel it causes on one of two streams, the ``ac2g`` flow between them and an allocator
event. Files are written to /tmp (or where asked), never to the repository.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HEADER = """{
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "totalGlobalMem": 85899345920}],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
  "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
"""
FOOTER = """  {
    "ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
    "ts": 0.000, "dur": %(end).3f
  }
  ],
  "traceName": "synthetic.json"
}
"""
STEP = """  {
    "ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1234, "tid": 1234,
    "ts": %(ts).3f, "dur": 12.500,
    "args": {
      "External id": %(i)d, "Record function id": 0, "Input Dims": [[64, 128], [128, 256], [256]], "Ev Idx": %(i)d
    }
  },
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1234, "tid": 1234,
    "ts": %(ts1).3f, "dur": 4.250,
    "args": {
      "External id": %(i)d, "cbid": 211, "correlation": %(i)d
    }
  },
  {
    "ph": "s", "id": %(i)d, "pid": 1234, "tid": 1234, "ts": %(ts1).3f, "cat": "ac2g", "name": "ac2g"
  },
  {
    "ph": "X", "cat": "kernel", "name": "void gemm_kernel<float, 128, 64>(float const*, float*)",
    "pid": 0, "tid": %(stream)d,
    "ts": %(ts2).3f, "dur": 9.750,
    "args": {
      "External id": %(i)d, "queued": 0, "device": 0, "context": 1, "stream": %(stream)d, "correlation": %(i)d,
      "registers per thread": 128, "shared memory": 49152, "blocks per SM": 1.5, "warps per SM": 12.0,
      "grid": [128, 4, 1], "block": [256, 1, 1], "est. achieved occupancy %%": 50
    }
  },
  {
    "ph": "f", "id": %(i)d, "pid": 0, "tid": %(stream)d, "ts": %(ts2).3f, "cat": "ac2g", "name": "ac2g", "bp": "e"
  },
  {
    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1234, "tid": 1234,
    "ts": %(ts1).3f,
    "args": {
      "Total Reserved": 2097152, "Total Allocated": %(alloc)d, "Bytes": 131072, "Device Id": 0,
      "Device Type": 1, "Addr": %(addr)d
    }
  },
"""
STEP_SIZE_BYTES = len(
    STEP % {"ts": 1e6, "ts1": 1e6, "ts2": 1e6, "i": 100000, "stream": 7, "alloc": 1 << 20, "addr": 1 << 40}
)
EVENTS_PER_STEP = 6


def write_trace(path: Path, size_bytes: int) -> int:
    """Write a trace of about ``size_bytes``; returns the number of events."""
    steps = max(1, size_bytes // STEP_SIZE_BYTES)
    with open(path, "w") as out:
        out.write(HEADER)
        for i in range(steps):
            ts = i * 20.0
            fields = {
                "ts": ts,
                "ts1": ts + 1,
                "ts2": ts + 6,
                "i": i,
                "stream": 7 + i % 2,
                "alloc": (1 << 20) + (i % 64) * 131072,
                "addr": (1 << 40) + (i % 64) * 131072,
            }
            out.write(STEP % fields)
        out.write(FOOTER % {"end": steps * 20.0 + 20})
    return steps * EVENTS_PER_STEP + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--mb", type=float, default=50)
    args = parser.parse_args()
    events = write_trace(args.path, int(args.mb * 1e6))
    print(f"{args.path}: {args.path.stat().st_size / 1e6:.1f} MB, {events} events")


if __name__ == "__main__":
    main()
