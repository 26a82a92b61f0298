"""The profiling window: which device work in a trace was launched before it opened.

Kineto records device work that is still running when the window opens, without the runtime
call that launched it (that call ran before the window). Such work has a correlation id that
no runtime call of the trace carries. It is device time the trace holds (every figure counts it
unless ``summary --window-launched-only`` leaves it out, as HTA and TraceLens do), ``verify``
notes it (``launched_before_window``), and collectives paired across ranks treat it as any other
row: a rank whose window opened later lacks that instance, which ``model.matching`` aligns.

The scalar form (``launched_before``) serves ``verify``'s streaming scan, the column form
(``launched_before_rows``) the analyses and findings; one rule.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def launched_before(work_correlations: Iterable[tuple[int, int]], call_correlations: set[int]) -> tuple[int, int]:
    """(executions, their device time in ns) of device work whose launching call is not in the
    trace: ``work_correlations`` are (correlation id, duration) of device work with an id,
    ``call_correlations`` the ids of the trace's runtime calls."""
    found = [dur for correlation, dur in work_correlations if correlation >= 0 and correlation not in call_correlations]
    return len(found), sum(found)


def launched_before_rows(is_device_work: np.ndarray, launch_id: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """Per row: device work with a correlation id that no launching call in the trace joined
    (``launch_id`` -1: ingest found no call with its correlation id)."""
    found: np.ndarray = is_device_work & (launch_id < 0) & (correlation >= 0)
    return found
