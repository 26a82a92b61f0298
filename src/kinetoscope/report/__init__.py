"""A dataset's report: every registered analysis and the findings, for ``kinetoscope summary``,
``kinetoscope report``, the viewer's Summary and Findings pages and ``Profile.summary()`` alike:
one plan and one runner (``runner``: every rank at once, rank by rank, or on a cluster), the
options it is made with (``settings``), and how it is written (``output``)."""
