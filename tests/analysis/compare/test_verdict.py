"""compare_verdict's decisions on hand-made digests: no steps, the threshold, the sign."""

from __future__ import annotations

from typing import Any

import numpy as np

from kinetoscope.analysis.compare import verdict as cv

from ..builder import Events

US = 1_000


def digest(step_ns: list[float], source: str = "ProfilerStep") -> dict[str, Any]:
    parts = {p: [0.0] * len(step_ns) for p in cv.PARTS}
    parts["host_only"] = list(step_ns)
    facts = {
        "devices": [],
        "world_size": 1,
        "compiled": False,
        "cuda_graphs": False,
        "events": 10,
        "dropped_events": 0,
        "top_op_shapes": {},
    }
    return {
        "label": "x",
        "ranks": [0],
        "steps": {
            "source": [source] if step_ns else [],
            "ranks_without": [],
            "numbers": list(range(len(step_ns))),
            "step_ns": step_ns,
            "parts_ns": parts,
        },
        "facts": facts,
        "evidence": {},
    }


def test_a_side_without_steps_is_inconclusive_and_named() -> None:
    found = cv.answer(digest([]), digest([100.0] * 6))
    assert found["verdict"]["verdict"] == "inconclusive"
    assert found["verdict"]["missing"][0].startswith("BASE has no ProfilerStep and no repeated")
    assert found["waterfall"]["parts"] == []


def test_the_threshold_and_the_sign_decide_between_neutral_regression_and_improvement() -> None:
    base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0]
    slower = [v * 1.03 for v in base]  # every step 3 % slower: significant
    assert cv.answer(digest(base), digest(slower))["verdict"]["verdict"] == "regression"
    assert cv.answer(digest(base), digest(slower), threshold_pct=5.0)["verdict"]["verdict"] == "neutral"
    assert cv.answer(digest(slower), digest(base))["verdict"]["verdict"] == "improvement"
    # AND the host-only part carries the whole change here: the waterfall adds up
    fall = cv.answer(digest(base), digest(slower))["waterfall"]
    assert fall["parts"][0]["part"] == "host_only"
    assert sum(p["delta_ns"] for p in fall["parts"]) == fall["total_delta_ns"]


def test_the_confidence_level_asked_decides_what_a_change_must_reach() -> None:
    # GIVEN 6 and 6 steps, all but one new step beyond every base step: p = 4/924 (exact), about 0.0043
    base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0]
    new = [103.0, 104.0, 102.5, 103.5, 100.8, 103.2]
    found = cv.answer(digest(base), digest(new))["verdict"]
    assert found["verdict"] == "regression" and found["test"]["level"] == 0.95
    # THEN at 99.6 % (a complete separation could still reach it) the same steps are not enough: neutral
    strict = cv.answer(digest(base), digest(new), level=0.996)["verdict"]
    assert strict["verdict"] == "neutral" and strict["test"]["level"] == 0.996


def test_device_idle_while_the_host_loads_data_is_host_bound_in_the_waterfall() -> None:
    # GIVEN one step [0,300) µs: k1 [0,10); k2 launched at 15 (queued before the batch was asked
    # for) starting at 200, while the host hands out a batch [20,180)
    trace = Events()
    trace.launched("k1", 0, 0, 10 * US)
    trace.launched("k2", 15 * US, 200 * US, 10 * US)
    trace.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 20 * US, 160 * US)
    step = cv.Steps("ProfilerStep", np.array([1]), np.array([0]), np.array([300 * US]))
    parts = {p: float(v[0]) for p, v in cv.step_parts(trace.tables()["events"], step).items()}
    # THEN the batch's 160 and the 5 before k2's launch are host-bound (data loading), the 25 after
    # the batch latency, the 90 after k2 host-only; nothing is left as other
    assert parts["idle_host_bound"] == 165 * US
    assert (parts["idle_launch"], parts["idle_other"], parts["host_only"]) == (25 * US, 0, 90 * US)
    assert sum(parts.values()) == 300 * US
