"""Reading a dataset: every table as Arrow, and SQL over all of them (DuckDB).

``open(path)`` accepts a dataset directory, or a profile tree (which is ingested first,
incrementally, into its default dataset location).
"""

from __future__ import annotations

from kinetoscope.query.dataset import Dataset, open_dataset

__all__ = ["Dataset", "open_dataset"]
