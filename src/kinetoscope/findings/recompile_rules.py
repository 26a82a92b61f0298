"""torch.compile recompiling inside the profiled window: frames compiled again for new inputs.

Dynamo names each compile ``F/N``: frame ``F``, its ``N``-th compile (``0/0`` the first, ``0/1`` the
first recompile). A trace records it on the compile's own labels (``entire_frame_compile_data:
fn_name=..., compile_id=0/1``) and on each call of the compiled graph (``Torch-Compiled Region: 0/1``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from kinetoscope.findings.engine import Observation, rule, severity_by_share
from kinetoscope.findings.ranks import RankData
from kinetoscope.model import compilation

NS_PER_MS = 1_000_000
FRAME_COMPILE = compilation.FRAME_COMPILE
FRAME_COMPILE_INNER = compilation.FRAME_COMPILE_INNER
COMPILE_ID = r"(!?\d+)/(\d+)"
TAGGED = r"compile_id=" + COMPILE_ID
REGION = "^" + re.escape(compilation.COMPILED_REGION) + ": " + COMPILE_ID


def _frame_compiles(data: RankData) -> np.ndarray:
    """Rows of whole-frame compiles: ``entire_frame_compile``, else (older torch) ``compile_inner``."""
    outer = np.flatnonzero(data.name_in((FRAME_COMPILE,)))
    return outer if len(outer) else np.flatnonzero(data.name_in((FRAME_COMPILE_INNER,)))


def _compile_id(data: RankData, row: int, tagged: np.ndarray, regions: np.ndarray) -> str:
    """The ``F/N`` of one compile: from a label that starts inside it on its thread, else from the
    first call of a compiled region after it on its thread; ``""`` when the trace has neither."""
    ts, tid = data.ints("ts_ns"), data.ints("tid")
    end_ns = int(data.ends(np.asarray([row]))[0])
    same = tid[tagged] == tid[row]
    inside = tagged[same & (ts[tagged] >= ts[row]) & (ts[tagged] < end_ns)]
    if not len(inside):
        inside = regions[(tid[regions] == tid[row]) & (ts[regions] >= end_ns)]
    if not len(inside):
        return ""
    found = re.search(COMPILE_ID, str(data.name_of(int(inside[np.argmin(ts[inside])]))))
    return f"{found.group(1)}/{found.group(2)}" if found else ""


def _calls_per_graph(data: RankData, regions: np.ndarray) -> dict[str, int]:
    ids = [re.search(COMPILE_ID, str(name)) for name in data.names_at(regions)]
    labels = [f"{m.group(1)}/{m.group(2)}" for m in ids if m]
    unique, counts = np.unique(np.asarray(labels, dtype=str), return_counts=True)
    return {str(u): int(c) for u, c in zip(unique, counts, strict=True)}


@rule(
    "recompilation",
    "torch.compile recompiles inside the profiled window",
    "medium",
    "Find the guard that failed with `TORCH_LOGS=recompiles` (it names the input and the shape or value that "
    "changed); mark the changing dimension dynamic (`torch._dynamo.mark_dynamic(x, dim)` or "
    "`torch.compile(dynamic=True)`), pad inputs to a few fixed sizes, or pass changing Python scalars as tensors.",
    min_recompiles=1,
)
def recompilation(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Frame compiles whose Dynamo compile id ``F/N`` has ``N >= 1``: frame ``F`` compiled again."""
    compiles = _frame_compiles(data)
    if not len(compiles):
        return []
    tagged = np.flatnonzero(data.name_matches(TAGGED))
    regions = np.flatnonzero(data.name_matches(REGION))
    ids = np.asarray([_compile_id(data, int(row), tagged, regions) for row in compiles], dtype=object)
    again = np.asarray([bool(i) and not i.endswith("/0") for i in ids], dtype=bool)
    rows = compiles[again]
    if len(rows) < limits["min_recompiles"] or not len(rows):
        return []
    dur = data.ints("dur_ns")[rows]
    recompile_ns = int(dur.sum())
    frames = sorted({i.split("/")[0] for i in ids[again]})
    calls = _calls_per_graph(data, regions)
    seen: dict[str, Any] = {
        "recompiles": len(rows),
        "recompile_ns": recompile_ns,
        "frame_compiles": len(compiles),
        "frames": frames,
        "recompiles_by_id": [{"compile_id": str(i), "ns": int(d)} for i, d in zip(ids[again], dur, strict=True)],
        "calls_per_graph": calls,
        "guard": "not recorded in the trace: run with TORCH_LOGS=recompiles to see it",
    }
    served = [calls.get(str(i), 0) for i in ids[again]]
    summary = (
        f"{len(rows)} recompile(s) of frame {', '.join(frames)} ({', '.join(str(i) for i in ids[again])}) "
        f"took {recompile_ns / NS_PER_MS:.1f} ms; the recompiled graphs ran {sum(served)} time(s) in the window"
    )
    basis = "the recompiles' time (whole-frame compiles with a compile id F/N, N >= 1): stable guards avoid them"
    return [Observation(summary, seen, rows, recompile_ns, basis, severity_by_share(recompile_ns, data.wall_ns))]
