"""Reading a dataset: every table as Arrow, and SQL over all of them (DuckDB).

``read_dataset(path)`` accepts a dataset directory or an object-store URL; a profile tree is
ingested first by ``kinetoscope.report.opening.open_dataset``, which the commands, ``kinetoscope.open``
and the viewer use.
"""

from __future__ import annotations

from kinetoscope.query.dataset import Dataset, read_dataset

__all__ = ["Dataset", "read_dataset"]
