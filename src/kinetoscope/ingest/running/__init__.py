"""Running an ingest over a profile tree: the plan and its report (``pipeline``), where sessions run
(``executors``: this process, worker processes, a cluster), the worker processes (``worker``) and one
large trace read by several processes (``chunked``)."""
