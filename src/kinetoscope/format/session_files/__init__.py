"""The files of a session directory: its paths (``session_dir``), ``trace_info.pb`` (``trace_info``),
the compiled-kernel index (``kernel_index``) and memory snapshots (``snapshot``)."""
