"""What each headline percentage is a share of, defined once; the summary's tables say it beside
the figure (``device idle (% of wall)``) and docs/analyses.md defines each.

* wall: the rank's window, the profiler's start to its stop (else the span of its events);
* device span: from the device's first work to its last;
* span: the timeline's own span (``temporal_breakdown``: the device span; ``idle_time``: each
  stream's, or the device's with ``stream`` -1).

So on a trace whose device starts long after the window opens, ``device_idle_pct`` (of the wall)
can be large while ``temporal_breakdown``'s ``idle_pct`` (of the device span) is small: both are
right, of different wholes.
"""

from __future__ import annotations

WALL, DEVICE_SPAN, SPAN = "wall", "device span", "span"
SHARE_OF = {
    "cpu_busy_pct": WALL,
    "device_busy_pct": WALL,
    "device_idle_pct": WALL,
    "compute_pct": DEVICE_SPAN,
    "non_compute_pct": DEVICE_SPAN,
    "idle_pct": SPAN,
}
