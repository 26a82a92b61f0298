"""Session directories -> a Parquet dataset (tables declared in ``dataset.schema``): each table's rows
(``rows``), one session's tables (``session``), and the run over a profile tree (``running``).

``ingest(IngestOptions(...))`` and ``default_dataset_path`` are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kinetoscope.ingest.running.pipeline import (
        IngestOptions,
        IngestReport,
        default_dataset_location,
        default_dataset_path,
        ingest,
    )

__all__ = ["IngestOptions", "IngestReport", "default_dataset_location", "default_dataset_path", "ingest"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'kinetoscope.ingest' has no attribute {name!r}")
    from kinetoscope.ingest.running import pipeline

    return getattr(pipeline, name)
