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


AnalysisOptions = TopOptions
DEFAULT_TOP = TopOptions()

__all__ = ["DEFAULT_TOP", "AnalysisOptions", "TopOptions"]
