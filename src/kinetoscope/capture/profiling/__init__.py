"""The profiler itself: what to capture (``ProfileConfig``), the exporter that writes each cycle as
a session, and the host facts, hooks and signal handling around it."""
