"""``model.significance``: the rank test that decides whether a per-step change is real."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from kinetoscope.model import significance


def _brute_force_p(base: list[float], new: list[float]) -> float:
    """Two-sided Mann-Whitney p by enumerating every split of the pooled steps (ties count half)."""
    pooled = base + new

    def u(chosen: tuple[int, ...]) -> float:
        b = [pooled[i] for i in chosen]
        n = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        return sum((x > y) + 0.5 * (x == y) for x in n for y in b)

    splits = list(itertools.combinations(range(len(pooled)), len(base)))
    centre = len(base) * len(new) / 2
    seen = abs(u(tuple(range(len(base)))) - centre)
    return sum(abs(u(c) - centre) >= seen - 1e-9 for c in splits) / len(splits)


@pytest.mark.parametrize(
    ("base", "new"),
    [
        ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]),
        ([1, 2, 3, 4, 5, 6, 7], [3, 5, 8, 9, 10, 11, 12]),  # ties across the sides
        ([5, 5, 5, 6], [5, 6, 6, 7, 7]),  # many ties
        ([10, 11, 12], [10.5, 11.5, 12.5]),
    ],
)
def test_exact_p_equals_an_enumeration_of_every_split(base: list[float], new: list[float]) -> None:
    got = significance.per_step_change(base, new, level=0.5)
    assert got.p_value == pytest.approx(_brute_force_p(base, new), abs=1e-12)


def test_every_new_step_several_times_every_base_step_is_a_real_change() -> None:
    # GIVEN six steps a side: NEW's median about +230 %, every NEW step at least 3.2x every BASE step, and one
    # NEW outlier step (the spread that hid the change: a median delta against the combined raw stdev)
    base = [50.0, 51.0, 52.0, 53.0, 52.0, 51.0]
    new = [171.0, 172.0, 173.0, 174.0, 175.0, 1500.0]
    assert min(new) / max(base) >= 3.2 and np.median(new) / np.median(base) - 1 > 2.2
    assert np.median(new) - np.median(base) < math.hypot(np.std(base, ddof=1), np.std(new, ddof=1))
    # WHEN tested
    got = significance.per_step_change(base, new)
    # THEN a change at 99.8 % confidence (p = 2 / C(12, 6)), NEW larger in every pair
    assert got.verdict == significance.CHANGED and got.significant is True
    assert got.p_value == pytest.approx(2 / math.comb(12, 6))
    assert got.prob_new_larger == 1.0
    assert got.effect == pytest.approx(np.median([n - b for n in new for b in base]))


def test_too_few_steps_is_inconclusive_with_the_reason_never_not_significant() -> None:
    # GIVEN three steps a side, completely separated: the best a rank test can show is p = 2 / C(6, 3) = 0.1
    got = significance.per_step_change([10, 11, 12], [33, 34, 200])
    assert got.verdict == significance.INCONCLUSIVE and got.significant is None
    assert got.confidence == pytest.approx(0.9) and got.best_confidence == pytest.approx(0.9)
    assert "3 and 3 steps" in got.reason and "95%" in got.reason
    # AND at 90 % it is enough
    assert significance.per_step_change([10, 11, 12], [33, 34, 200], level=0.9).significant is True
    # AND a side without steps has no answer at all
    empty = significance.per_step_change([], [1.0, 2.0])
    assert empty.verdict == significance.INCONCLUSIVE and empty.p_value is None


def test_a_shift_inside_the_variation_is_not_significant() -> None:
    base = [10, 14, 11, 13, 12, 15, 9]
    new = [11, 13, 12, 14, 10, 15, 12]
    got = significance.per_step_change(base, new)
    assert got.verdict == significance.UNCHANGED and got.significant is False


def test_many_steps_use_the_normal_approximation_close_to_exact() -> None:
    rng = np.random.default_rng(7)
    base, new = rng.normal(100, 5, 35), rng.normal(103, 5, 35)
    got = significance.per_step_change(base, new)
    assert got.method == significance.NORMAL
    # the exact p on the same data (60 steps is the exact method's limit: 30 + 30)
    exact = significance.per_step_change(base[:30], new[:30])
    assert exact.method == significance.EXACT
    assert 0 <= got.p_value <= 1 and got.significant == (got.p_value <= 0.05)
