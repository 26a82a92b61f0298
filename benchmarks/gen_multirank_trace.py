"""Generate a multi-rank torch.profiler (Kineto JSON) trace set of a chosen size, for benchmarks.

Each rank's file looks like a CUDA training step as torch 2.x exports it: ``ProfilerStep#N``
annotations, nested ``aten::`` ops, ``cudaLaunchKernel`` calls with correlation ids and
``ac2g`` flows, kernels on two streams, memory copies, and NCCL all-reduce kernels carrying
collective metadata. Usage::

    python benchmarks/gen_multirank_trace.py OUT_DIR --ranks 4 --mb-per-rank 55
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.kineto_gen import Writer  # the one streaming Kineto writer

PID, MAIN_TID, COMPUTE_STREAM, COMM_STREAM = 1000, 1000, 7, 20
OPS = ("aten::linear", "aten::addmm", "aten::relu", "aten::add_", "aten::mul", "aten::copy_", "aten::sum")
KERNELS = (
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(Params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float*)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t>>()",
)


class Step:
    """State of the step being generated: time cursors and ids."""

    def __init__(self, writer: Writer, rng: random.Random, rank: int) -> None:
        self.w, self.rng, self.rank = writer, rng, rank
        self.ts, self.gpu_ts, self.ext, self.corr, self.seq = 1000.0, 1000.0, 1, 1, 0

    def x(self, cat: str, name: str, ts: float, dur: float, tid: int, *, pid: int = PID, **args: Any) -> None:
        self.w.event(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": pid,
                "tid": tid,
                "ts": round(ts, 3),
                "dur": round(dur, 3),
                "args": args,
            }
        )

    def launch(self, op_ts: float, ext: int, name: str, stream: int, **meta: Any) -> None:
        corr, self.corr = self.corr, self.corr + 1
        call_ts = op_ts + 1.0
        self.x("cuda_runtime", "cudaLaunchKernel", call_ts, 4.0, MAIN_TID, **{"External id": ext, "correlation": corr})
        start = max(self.gpu_ts, call_ts + 5.0)
        dur = self.rng.uniform(5.0, 40.0) if stream == COMPUTE_STREAM else self.rng.uniform(50.0, 300.0)
        self.x(
            "kernel",
            name,
            start,
            dur,
            stream,
            pid=0,
            device=0,
            stream=stream,
            correlation=corr,
            **{"External id": ext},
            **meta,
        )
        self.w.event(
            {"ph": "s", "id": corr, "pid": PID, "tid": MAIN_TID, "ts": round(call_ts, 3), "cat": "ac2g", "name": "ac2g"}
        )
        self.w.event(
            {
                "ph": "f",
                "id": corr,
                "pid": 0,
                "tid": stream,
                "ts": round(start, 3),
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )
        if stream == COMPUTE_STREAM:
            self.gpu_ts = start + dur + 1.0

    def op(self) -> None:
        ext, self.ext = self.ext, self.ext + 2
        name = self.rng.choice(OPS)
        self.x("cpu_op", name, self.ts, 20.0, MAIN_TID, **{"External id": ext, "Input Dims": [[64, 512], [512]]})
        self.x("cpu_op", "aten::empty", self.ts + 0.5, 0.4, MAIN_TID, **{"External id": ext + 1})
        self.launch(self.ts, ext, self.rng.choice(KERNELS), COMPUTE_STREAM)
        self.ts += 25.0

    def allreduce(self) -> None:
        ext, self.ext = self.ext, self.ext + 1
        self.seq += 1
        meta = {
            "Collective name": "allreduce",
            "Process Group Name": "0",
            "Seq": self.seq,
            "In msg nelems": 1 << 20,
            "dtype": "Float",
            "Group size": 4,
        }
        self.x("cpu_op", "record_param_comms", self.ts, 15.0, MAIN_TID, **{"External id": ext}, **meta)
        self.launch(
            self.ts,
            ext,
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            COMM_STREAM,
            **meta,
        )
        self.ts += 20.0

    def step(self, number: int, ops: int) -> None:
        start = self.ts
        self.ts += 5.0
        for i in range(ops):
            self.op()
            if i % 50 == 49:
                self.allreduce()
        end = max(self.ts, self.gpu_ts)
        self.x("user_annotation", f"ProfilerStep#{number}", start, end - start, MAIN_TID, **{"External id": 0})
        self.ts = end + 10.0


def generate(out_dir: Path, ranks: int, mb_per_rank: float, seed: int = 0) -> list[Path]:
    """Write one trace per rank under ``out_dir``, each at least ``mb_per_rank`` MB; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        path = out_dir / f"rank{rank}.pt.trace.json"
        with open(path, "w") as handle:
            writer = Writer(handle, {
                "schemaVersion": 1,
                "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks},
                "deviceProperties": [],
                "baseTimeNanoseconds": 1_700_000_000_000_000_000,
            })
            state, number = Step(writer, random.Random(seed + rank), rank), 1
            while handle.tell() < mb_per_rank * 1e6:
                state.step(number, ops=500)
                number += 1
            writer.close()
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--mb-per-rank", type=float, default=55.0)
    args = parser.parse_args()
    paths = generate(args.out_dir, args.ranks, args.mb_per_rank)
    total = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} traces, {total / 1e6:.0f} MB in all, under {args.out_dir}")


if __name__ == "__main__":
    main()
