"""The rows of each table, from what a session's files hold: trace events into columns
(``columns``, ``trace_events``), nesting and flow links (``nesting``, ``links``), memory
(``allocations``, ``segments``), compiled kernels (``kernels``) and sampled counters (``samples``)."""
