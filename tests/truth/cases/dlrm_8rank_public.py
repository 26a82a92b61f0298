"""The public DLRM traces: eight V100 ranks of one NCCL job, one step, kernels without metadata.

A real trace set (``tests/data/dlrm_8rank``: facebookresearch/param, MIT). The NCCL kernels carry
no ``Collective name``, group or ``Seq``; every rank's window holds the same eight collectives
(5 all-to-alls run as ``SendRecv`` kernels, 3 all-reduces). The hand count reads the raw JSON:
each rank's k-th kernel of a kind is the k-th instance of that kind (the windows hold the same
step), whose latency is the shortest duration over the ranks and whose last rank started last.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

from tests.truth.harness import Between, Case

DATA = Path(__file__).resolve().parents[2] / "data" / "dlrm_8rank"
KIND = re.compile(r"^nccl(?:Dev)?Kernel_(SendRecv|AllReduce)")


def build(folder: Path) -> Path:
    traces = folder / "traces"
    traces.mkdir()
    for path in sorted(DATA.glob("*.json.gz")):
        shutil.copy(path, traces / path.name)
    return traces


def hand_count() -> dict[str, Any]:
    """Per (kind, k): each rank's k-th kernel of that kind as (start, dur), from the raw JSON."""
    by_instance: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}
    for path in sorted(DATA.glob("*.json.gz")):
        document = json.loads(gzip.decompress(path.read_bytes()))
        rank = document["distributedInfo"]["rank"]
        kernels = sorted((e["ts"], e["dur"], m.group(1)) for e in document["traceEvents"]
                         if e.get("cat") == "kernel" and (m := KIND.match(e["name"])))
        seen: dict[str, int] = {}
        for ts, dur, kind in kernels:
            k = seen[kind] = seen.get(kind, -1) + 1
            by_instance.setdefault((kind, k), {})[rank] = (round(ts * 1000), round(dur * 1000))
    latency = {key: min(d for _, d in ranks.values()) for key, ranks in by_instance.items()}
    last = {key: max(ranks, key=lambda r: (ranks[r][0], -r)) for key, ranks in by_instance.items()}
    waits = {r: sum(ranks[r][1] - latency[key] for key, ranks in by_instance.items()) for r in range(8)}
    return {"instances": len(by_instance), "latency": latency, "last": last, "waits": waits,
            "allreduce": sum(1 for kind, _ in by_instance if kind == "AllReduce")}


_COUNT = hand_count()
_FIRST_A2A = ("SendRecv", 0)

CASE = Case(
    name="dlrm_8rank_public",
    situation="eight real V100 ranks (public DLRM traces): NCCL all-to-all and all-reduce kernels without "
    "collective metadata",
    source="facebookresearch/param et_replay/tests/inputs/dlrm_kineto.tar.gz (tests/data/dlrm_8rank)",
    truth="hand count over the raw JSON; HTA 0.5's get_potential_stragglers also names rank 7",
    build=build,
    numbers={
        "summary:matched_collectives.#": _COUNT["instances"],
        "summary:matched_collectives.count(collective=allreduce)": _COUNT["allreduce"],
        "summary:matched_collectives.max(end_spread_ns)": Between(0, 10_000),  # one step: they end together
        "summary:matched_collectives[collective=sendrecv,number=0].latency_ns": _COUNT["latency"][_FIRST_A2A],
        "summary:matched_collectives[collective=sendrecv,number=0].last_rank": _COUNT["last"][_FIRST_A2A],
        "summary:collective_waits[rank=0].wait_ns": _COUNT["waits"][0],
        "summary:collective_waits[rank=7].wait_ns": _COUNT["waits"][7],
        "findings:findings[rule=straggler].rank": 7,
        "verify:findings.count(check=clock_skew)": 0,
    },
    expected_findings=("straggler",),
    forbidden_problems=("clock_skew",),
)
