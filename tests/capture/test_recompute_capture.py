"""Activation recomputation on real CPU captures with ``torch.utils.checkpoint``, both forms: the
recomputed ops are the checkpointed block's forward ops, timed as torch's own event tree times them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns
from kinetoscope.analysis.ops import recompute
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from .helpers import runtime_profile


def _step(use_checkpoint: bool, reentrant: bool) -> None:
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
    head = torch.nn.Linear(64, 8)
    x = torch.randn(32, 64, requires_grad=True)
    hidden = checkpoint(block, x, use_reentrant=reentrant) if use_checkpoint else block(x)
    head(hidden).sum().backward()


def _torch_recomputed_us(prof: Any) -> dict[str, float]:
    """The outermost recomputed ops' time per name, by torch's own tree (``cpu_parent``), in µs."""

    def chain(event: Any) -> list[Any]:
        found = []
        while event.cpu_parent is not None:
            event = event.cpu_parent
            found.append(event)
        return found

    def is_recomputed(event: Any) -> bool:
        up = chain(event)
        under = any(e.name.startswith(recompute.BACKWARD_NODE) for e in up)
        node = event.name.startswith(recompute.BACKWARD_NODE) or (
            bool(up) and up[0].name.startswith(recompute.BACKWARD_NODE)
        )
        return under and not node and event.sequence_nr >= 0

    times: dict[str, float] = {}
    for event in prof.events():
        if is_recomputed(event) and not (event.cpu_parent is not None and is_recomputed(event.cpu_parent)):
            times[event.name] = times.get(event.name, 0.0) + event.time_range.elapsed_us()
    return times


def _analysis_rows(tmp_path: Path) -> list[dict[str, Any]]:
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    analysis = ANALYSES_BY_NAME["activation_recomputation"]
    with open_dataset(tmp_path / "ds") as ds:
        return analysis(ds.load(needed_columns((analysis,)))).to_pylist()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointed_forward_is_found_recomputed_in_backward(tmp_path: Path, reentrant: bool) -> None:
    # GIVEN a Linear-GELU-Linear block under checkpoint, then a Linear head, one training step on CPU
    with runtime_profile(tmp_path / "prof", record_shapes=True) as prof:
        _step(use_checkpoint=True, reentrant=reentrant)
    rows = _analysis_rows(tmp_path)
    # THEN the block's three forward ops are recomputed (the head's Linear is not)
    total, *by_op = rows
    assert (total["op"], total["calls"], total["time_source"]) == (recompute.ALL, 3, "cpu")
    assert {r["op"]: r["calls"] for r in by_op} == {"aten::linear": 2, "aten::gelu": 1}
    # timed as torch's own event tree times the same ops (within the µs rounding of the trace)
    expected = _torch_recomputed_us(prof)
    assert set(expected) == {"aten::linear", "aten::gelu"}
    for row in by_op:
        assert row["cpu_ns"] == pytest.approx(expected[row["op"]] * 1000, abs=2_000 * row["calls"])
    assert 0 < total["pct"] < total["pct_of_backward"] < 100


def test_no_checkpoint_no_recomputation(tmp_path: Path) -> None:
    with runtime_profile(tmp_path / "prof", record_shapes=True):
        _step(use_checkpoint=False, reentrant=False)
    (total,) = _analysis_rows(tmp_path)
    assert (total["op"], total["calls"], total["time_ns"], total["pct"]) == (recompute.ALL, 0, 0, 0.0)
