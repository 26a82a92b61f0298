"""A dataset's report: every registered analysis and the findings, made over every rank at once
or one rank at a time, for ``kinetoscope summary`` and the viewer's Summary and Findings pages
alike (one engine, two sinks)."""
