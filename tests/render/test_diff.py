"""The diff report as text: the step-time verdict says the model's answer, its confidence and why."""

from __future__ import annotations

import io

from kinetoscope.analysis.compare import headline_figures
from kinetoscope.render import diff


def _steps_text(base: list[float], new: list[float]) -> str:
    out = io.StringIO()
    diff.write_steps(diff.Writer(out, markdown=False), headline_figures.step_comparison(base, new))
    return out.getvalue()


def test_every_new_step_far_slower_reads_significant_with_its_confidence() -> None:
    text = _steps_text([50e6, 51e6, 52e6, 53e6, 52e6, 51e6], [171e6, 172e6, 173e6, 174e6, 175e6, 1500e6])
    assert "significant, 99.8% confidence; every NEW step slower than every BASE step" in text
    assert "not significant" not in text


def test_three_steps_a_side_read_inconclusive_and_say_why() -> None:
    text = _steps_text([10e6, 11e6, 12e6], [33e6, 34e6, 200e6])
    assert "inconclusive, 90.0% confidence" in text and "3 and 3 steps cannot show a change at 95%" in text
