"""Kineto JSON traces (torch.profiler's ``export_chrome_trace`` output): streamed from their bytes
(``trace_source``), cut at event boundaries (``json_spans``), decoded into records (``trace_records``)
by the reader (``kineto_json``)."""
