"""Kineto events -> a session's system and device traces (``ntrace.pb``, ``device_<N>.pb``):
the `.pb` sink of the event model."""
