"""Tiny events tables for the gap and window analyses: device work with its stream and launch call."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns, prepared
from kinetoscope.cli import main
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..conftest import REPO

PUBLIC = REPO.parent / "shared" / "datasets" / "public-traces"
SCHEMA = pa.schema(
    [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("id", pa.int64()),
        ("layer", pa.string()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("category", pa.string()),
        ("ts_ns", pa.int64()),
        ("dur_ns", pa.int64()),
        ("tid", pa.int64()),
        ("device", pa.int32()),
        ("stream", pa.int64()),
        ("collective", pa.string()),
        ("depth", pa.int32()),
        ("parent_id", pa.int64()),
        ("op_id", pa.int64()),
        ("launch_id", pa.int64()),
        ("correlation", pa.int64()),
        ("self_ns", pa.int64()),
        ("step", pa.int32()),
    ]
)
HOST = {"layer": "runtime", "kind": "runtime", "category": "cuda_runtime", "tid": 1, "device": -1, "stream": -1}


class Events:
    """Rows appended one by one (ids are row positions); ``tables()`` gives what the analyses read."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, name: str, ts_ns: int, dur_ns: int, **fields: Any) -> int:
        row = {"run": "r", "rank": 0, "id": len(self.rows), "name": name, "ts_ns": ts_ns, "dur_ns": dur_ns}
        defaults = {"collective": "", "depth": 0, "parent_id": -1, "op_id": -1, "launch_id": -1, "correlation": -1}
        self.rows.append({**row, **defaults, "self_ns": dur_ns, "step": -1, **fields})
        return len(self.rows) - 1

    def call(self, name: str, ts_ns: int, dur_ns: int = 2, **fields: Any) -> int:
        return self.add(name, ts_ns, dur_ns, **{**HOST, **fields})

    def op(self, name: str, ts_ns: int, dur_ns: int, **fields: Any) -> int:
        framework = {"layer": "framework", "kind": "op", "category": "cpu_op", "tid": 1, "device": -1, "stream": -1}
        return self.add(name, ts_ns, dur_ns, **{**framework, **fields})

    def work(
        self, name: str, ts_ns: int, dur_ns: int, *, stream: int = 7, launch: int = -1, kind: str = "kernel"
    ) -> int:
        """Device work on device 0; ``launch`` the id of its launch call (-1: none in the trace)."""
        place = {"layer": "device", "kind": kind, "category": kind, "tid": -1, "device": 0, "stream": stream}
        return self.add(name, ts_ns, dur_ns, launch_id=launch, **place)

    def launched(self, name: str, call_ns: int, ts_ns: int, dur_ns: int, *, stream: int = 7) -> int:
        """A ``cudaLaunchKernel`` at ``call_ns`` and the kernel it starts at ``ts_ns``."""
        return self.work(name, ts_ns, dur_ns, stream=stream, launch=self.call("cudaLaunchKernel", call_ns))

    def tables(self) -> dict[str, pa.Table]:
        return {"events": pa.Table.from_pylist(self.rows, schema=SCHEMA)}


def public_tables(tmp_path: Path, trace: str, *names: str) -> dict[str, pa.Table]:
    """A public trace copied to ``tmp_path``, imported and ingested as a user would, loaded for ``names``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    copy = tmp_path / Path(trace).name
    shutil.copy(PUBLIC / trace, copy)
    assert main(["import", str(copy), "--out", str(tmp_path / "prof")]) == 0
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 0
    with open_dataset(tmp_path / "ds") as dataset:
        return prepared(dataset.load(needed_columns(tuple(ANALYSES_BY_NAME[name] for name in names))))


def capture_first_step_builds(root: Path) -> Path:
    """A real CPU capture under ``root`` of six steps whose first builds and initialises a large
    model (tens of ms), then runs a small layer (tens of µs) each step; its dataset."""
    torch = pytest.importorskip("torch")
    from ..capture.helpers import runtime_profile

    x = torch.randn(16, 64)
    layers: list = []
    with runtime_profile(root / "prof", schedule=torch.profiler.schedule(wait=0, warmup=0, active=6)) as prof:
        for step in range(6):
            if step == 0:
                layers = [torch.nn.Linear(1024, 1024) for _ in range(8)]
                small = torch.nn.Linear(64, 64)
            small(x).sum()
            prof.step()
    del layers
    assert ingest(IngestOptions(profile_dir=root / "prof", out=root / "ds")).status == "ok"
    return root / "ds"
