"""Each analysis takes its own options: ``top`` reaches the ranked analyses and no other."""

from __future__ import annotations

import pytest

from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, Analysis, IdleOptions, TopOptions, run_all
from tests.analysis.test_analyses import events, work

RANKED = {
    "top_ops",
    "top_kernels",
    "gpu_time_by_op",
    "gpu_time_by_shape",
    "gpu_time_by_top_op",
    "gpu_time_by_module",
    "op_roofline",
    "top_allocation_stacks",
    "activation_recomputation",
    "cuda_graph_capture_ops",
    "matched_collectives",
    "collective_arrivals",
}


def _kernels(count: int) -> dict[str, object]:
    return {"events": events([work(f"kernel_{i}", 10 * i, 5 + i) for i in range(count)])}


def test_only_the_ranked_analyses_take_top() -> None:
    assert {a.name for a in ANALYSES if a.options is TopOptions} == RANKED
    assert all(a.options in (None, TopOptions, IdleOptions) for a in ANALYSES)


def test_top_cuts_a_ranked_table_most_time_first() -> None:
    # GIVEN five kernels of growing duration WHEN top_kernels keeps two THEN the two longest remain
    found = ANALYSES_BY_NAME["top_kernels"](_kernels(5), TopOptions(top=2)).to_pylist()
    assert [r["name"] for r in found] == ["kernel_4", "kernel_3"]
    assert len(ANALYSES_BY_NAME["top_kernels"](_kernels(12)).to_pylist()) == 10  # the default


def test_run_all_hands_each_analysis_its_own_options() -> None:
    results = run_all(_kernels(5), (TopOptions(top=1),), analyses=(ANALYSES_BY_NAME["top_kernels"],))
    assert results["top_kernels"].num_rows == 1


def test_an_analysis_refuses_options_it_does_not_take() -> None:
    breakdown: Analysis = ANALYSES_BY_NAME["temporal_breakdown"]
    with pytest.raises(TypeError, match="takes no options"):
        breakdown(_kernels(1), TopOptions(top=1))
    assert breakdown.pick((TopOptions(top=1),)) is None


def test_top_is_not_negative() -> None:
    with pytest.raises(ValueError, match="0 or more"):
        TopOptions(top=-1)
