"""The options an analysis takes, one frozen dataclass per family of analyses.

An analysis declares the options class it reads (``Analysis.options``), or none; a caller hands
``run_all`` the option objects it has, and each analysis gets the one of its own class, or that
class's defaults. So ``--top`` reaches the ranked analyses and no other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class TopOptions:
    """Options of the ranked analyses (``top_ops``, ``top_kernels``, the ``gpu_time_by_*`` roll-ups,
    ``op_roofline``, ``top_allocation_stacks``, ``activation_recomputation``).

    ``top``: rows kept per rank, most time (or bytes) first; the roll-ups keep their
    no-launching-op lines beyond it, ``op_roofline`` keeps ``top`` shapes with a cost model and
    ``top`` without one, ``activation_recomputation`` its total line and ``top`` op names.
    """

    top: int = 10

    def __post_init__(self) -> None:
        if self.top < 0:
            raise ValueError(f"top must be 0 or more, not {self.top}")


@dataclass(frozen=True, kw_only=True)
class IdleOptions:
    """Options of the analyses of the time between device work (``idle_time``, ``idle_gaps``,
    ``kernel_launches``).

    ``launch_latency_max_ns``: the longest a queued op may wait to start and still count as launch
    latency (HTA's ``consecutive_kernel_delay``, 30 µs); beyond it the wait is ``other``.
    ``short_kernel_ns``: device work shorter than this is a short kernel (default 10 µs).
    """

    launch_latency_max_ns: int = 30_000
    short_kernel_ns: int = 10_000

    def __post_init__(self) -> None:
        for name in ("launch_latency_max_ns", "short_kernel_ns"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, not {getattr(self, name)}")


AnalysisOptions = TopOptions | IdleOptions
DEFAULT_TOP = TopOptions()
DEFAULT_IDLE = IdleOptions()

__all__ = ["DEFAULT_IDLE", "DEFAULT_TOP", "AnalysisOptions", "IdleOptions", "TopOptions"]
