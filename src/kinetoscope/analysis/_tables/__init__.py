"""The toolkit the analyses are written with: dataset tables split per rank, columns read as numpy,
masks and lookups found once per table, groups, intervals and result tables.

Private to ``kinetoscope.analysis``: the layers above (findings, report, viewer, cli) import these
names from ``kinetoscope.analysis.tables``, their one public entry.
"""
