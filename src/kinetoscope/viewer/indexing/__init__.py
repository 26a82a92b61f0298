"""The viewer's index of a dataset (a DuckDB file beside it), what it opens, the ids it sends, and
the clocks kept with it."""
