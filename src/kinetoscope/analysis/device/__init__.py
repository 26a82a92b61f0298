"""The device's time: how it splits between computation, communication, memory operations and idle
(``device_time``), the gaps between its work and what the host did meanwhile (``gaps``, ``idle``),
and how its work is launched and queued (``launches``)."""
