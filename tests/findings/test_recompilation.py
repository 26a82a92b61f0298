"""The recompilation rule on real CPU captures: a compiled function called with new shapes inside
the profiled window (``dynamic=False``), and the same function called with one shape."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

from kinetoscope.findings import RULES, run_rules

from ..conftest import requires_cxx
from .test_captured_rules import STEPS, capture

pytestmark = pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")


def compiled_step(sizes: list[int]) -> Callable[[], object]:
    """A function compiled (with its first size) before the window, then called with ``sizes`` in turn."""
    torch._dynamo.reset()
    fn = torch.compile(lambda t: (t * 2 + 1).sin(), dynamic=False)
    inputs = iter([torch.randn(n) for n in sizes])
    fn(torch.randn(sizes[0]))
    return lambda: fn(next(inputs))


@requires_cxx
def test_new_shapes_in_the_window_are_counted_as_recompiles_of_their_frame(tmp_path: Path) -> None:
    # GIVEN steps calling a compiled function with sizes 32 (compiled before the window), 48, 64, 64
    step = compiled_step([32, 48, 64, 64])
    frames_before = counters["frames"]["ok"]
    tables = capture(tmp_path, step)
    (found,) = run_rules(tables, rules=[RULES["recompilation"]])
    # THEN as many recompiles as Dynamo's own count of frames it compiled in the window
    assert found.seen["recompiles"] == counters["frames"]["ok"] - frames_before
    # two recompiles of frame 0 (0/1 for 48, 0/2 for 64), each graph's calls counted from the trace
    assert found.seen["recompiles"] == 2 and found.seen["frames"] == ["0"]
    assert [r["compile_id"] for r in found.seen["recompiles_by_id"]] == ["0/1", "0/2"]
    assert found.seen["calls_per_graph"] == {"0/0": 1, "0/1": 1, "0/2": 2}
    assert found.gain_ns == found.seen["recompile_ns"] == sum(r["ns"] for r in found.seen["recompiles_by_id"]) > 0
    assert [e.name for e in found.evidence] == ["entire_frame_compile"] * 2
    assert "TORCH_LOGS=recompiles" in found.remedy


@requires_cxx
def test_one_shape_after_warm_up_is_silent(tmp_path: Path) -> None:
    # GIVEN the same compiled function called with the shape it was compiled for, STEPS times
    tables = capture(tmp_path, compiled_step([32] * (STEPS + 1)))
    assert run_rules(tables, rules=[RULES["recompilation"], RULES["compile_in_window"]]) == []
