"""Whether a per-step change is real: a rank test that fits the few steps a trace holds.

Two runs give a handful of per-step values each (step times, or an op's self time in each step).
A mean or median difference set against the raw standard deviation is misleading with so few
samples: one outlier step inflates the spread and hides a change where every new step is slower
than every base step. So the decision is the Mann-Whitney U test (Wilcoxon rank sum), two-sided:

* exact for small samples (the distribution of the rank sum under "no change", counted over every
  way to split the steps, ties given their mid-rank), a normal approximation with the tie
  correction past ``EXACT_MAX_STEPS`` steps in all;
* the effect is the Hodges-Lehmann shift (median of every new - base difference), in the values'
  unit, and the probability that a new step is larger than a base step (ties count half);
* ``confidence`` is 1 - p. With so few steps that even a complete separation could not reach the
  asked level (3 and 3 steps: p is at least 0.1), the answer is ``inconclusive`` with that reason,
  never "not significant".

Pure numpy and stdlib, so that every consumer (``diff``, its verdict, the viewer) decides alike.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

DEFAULT_LEVEL = 0.95  # the confidence a change must reach to be called real
EXACT_MAX_STEPS = 60  # both sides together; beyond it the normal approximation is within 1e-3 of exact
CHANGED, UNCHANGED, INCONCLUSIVE = "changed", "unchanged", "inconclusive"
EXACT, NORMAL = "mann_whitney_exact", "mann_whitney_normal"


@dataclass(frozen=True)
class ChangeTest:
    """The answer for one pair of per-step samples (``base``, ``new``)."""

    verdict: str  # changed | unchanged | inconclusive
    significant: bool | None  # None: inconclusive
    reason: str  # why inconclusive (or what the answer rests on), one sentence
    base_steps: int
    new_steps: int
    effect: float | None  # Hodges-Lehmann shift, new - base, in the values' unit
    effect_pct: float | None  # the shift against the base median, in percent
    prob_new_larger: float | None  # P(a new step > a base step), ties half
    p_value: float | None
    confidence: float | None  # 1 - p
    best_confidence: float | None  # the most these step counts can show (a complete separation)
    level: float
    method: str | None

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def per_step_change(base: Any, new: Any, level: float = DEFAULT_LEVEL) -> ChangeTest:
    """Whether ``new``'s per-step values differ from ``base``'s at ``level`` confidence (two-sided)."""
    b = np.asarray(base, dtype=np.float64).ravel()
    n = np.asarray(new, dtype=np.float64).ravel()
    b, n = b[np.isfinite(b)], n[np.isfinite(n)]
    if not len(b) or not len(n):
        return _inconclusive(len(b), len(n), level, "no steps on one side: nothing to compare")
    effect, effect_pct, larger = _effect(b, n)
    best = min(1.0, 2.0 / math.comb(len(b) + len(n), len(b)))  # every new step beyond every base step
    alpha = 1.0 - level
    if best > alpha + 1e-12:
        p, _, method = _p_values(b, n)
        reason = (f"{len(b)} and {len(n)} steps cannot show a change at {level:.0%} confidence "
                  f"(at most {1.0 - best:.0%} even if every new step differed from every base step); "
                  "profile more steps")
        return ChangeTest(INCONCLUSIVE, None, reason, len(b), len(n), effect, effect_pct, larger, p, 1.0 - p,
                          1.0 - best, level, method)
    both = np.concatenate([b, n])
    if np.all(both == both[0]):
        return ChangeTest(UNCHANGED, False, "every step took the same time on both sides", len(b), len(n),
                          0.0, 0.0, 0.5, 1.0, 0.0, 1.0 - best, level, None)
    p, _, method = _p_values(b, n)
    common = (len(b), len(n), effect, effect_pct, larger, p, 1.0 - p, 1.0 - best, level, method)
    if p <= alpha + 1e-12:
        return ChangeTest(CHANGED, True, f"a rank test over {len(b)} and {len(n)} steps: p = {p:.3g}", *common)
    return ChangeTest(UNCHANGED, False, f"within the step-to-step variation (p = {p:.3g})", *common)


def _inconclusive(base_steps: int, new_steps: int, level: float, reason: str) -> ChangeTest:
    return ChangeTest(INCONCLUSIVE, None, reason, base_steps, new_steps, None, None, None, None, None, None,
                      level, None)


def _effect(b: np.ndarray, n: np.ndarray) -> tuple[float, float | None, float]:
    diffs = (n[:, None] - b[None, :]).ravel()
    shift = float(np.median(diffs))
    base_median = float(np.median(b))
    pct = 100.0 * shift / base_median if base_median else None
    larger = float((np.count_nonzero(diffs > 0) + 0.5 * np.count_nonzero(diffs == 0)) / len(diffs))
    return shift, pct, larger


def _doubled_ranks(values: np.ndarray) -> np.ndarray:
    """2 x the mid-rank of each value (1-based): integers, ties sharing the mean of their ranks."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int64)
    sorted_values = values[order]
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            ranks[order[start:end]] = start + end + 1  # 2 x mean of ranks start+1 .. end
            start = end
    return ranks


def _p_values(b: np.ndarray, n: np.ndarray) -> tuple[float, float, str]:
    """(two-sided p of the observed rank sum of ``b``, p of the most extreme possible one, method)."""
    ranks = _doubled_ranks(np.concatenate([b, n]))
    observed = int(ranks[: len(b)].sum())
    extreme = int(np.sort(ranks)[-len(b):].sum())
    if len(ranks) <= EXACT_MAX_STEPS:
        table = _null_distribution(len(b), tuple(sorted(ranks.tolist())))
        return _exact_p(table, observed), _exact_p(table, extreme), EXACT
    return _normal_p(ranks, len(b), observed), _normal_p(ranks, len(b), extreme), NORMAL


@lru_cache(maxsize=256)
def _null_distribution(m: int, ranks: tuple[int, ...]) -> np.ndarray:
    """Probability of each doubled rank sum of ``m`` of ``ranks`` chosen at random (every split equally likely)."""
    top = sum(sorted(ranks)[-m:])
    ways = np.zeros((m + 1, top + 1))
    ways[0, 0] = 1.0
    for r in ranks:  # each value joins the chosen m or not; rows are how many chosen so far
        ways[1:, r:] = ways[1:, r:] + ways[:-1, : top + 1 - r]
    total: np.ndarray = ways[m] / ways[m].sum()
    return total


def _exact_p(table: np.ndarray, observed: int) -> float:
    sums = np.arange(len(table))
    mean = float((sums * table).sum())
    far = np.abs(sums - mean) >= abs(observed - mean) - 1e-9
    return float(min(1.0, table[far].sum()))


def _normal_p(ranks: np.ndarray, m: int, observed: int) -> float:
    """Normal approximation of the rank sum (in doubled ranks), with the tie correction and continuity."""
    size = len(ranks)
    k = size - m
    mean = m * (size + 1)  # doubled
    _, counts = np.unique(ranks, return_counts=True)
    tie = float((counts**3 - counts).sum()) / (size * (size - 1)) if size > 1 else 0.0
    variance = 4.0 * m * k / 12.0 * ((size + 1) - tie)  # doubled ranks: 4 x the usual variance
    if variance <= 0:
        return 1.0
    z = max(abs(observed - mean) - 1.0, 0.0) / math.sqrt(variance)  # continuity: half a rank, doubled
    return float(min(1.0, math.erfc(z / math.sqrt(2.0))))
