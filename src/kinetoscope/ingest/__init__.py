"""Session directories -> a Parquet dataset (tables declared in ``schema``)."""

from __future__ import annotations

from kinetoscope.ingest.pipeline import IngestOptions, IngestReport, default_dataset_path, ingest

__all__ = ["IngestOptions", "IngestReport", "default_dataset_path", "ingest"]
