"""Running an ingest over a profile tree: the plan and its report (``pipeline``), where sessions run
(``executors``: this process, worker processes, a cluster), and the worker processes (``worker``)."""
