"""Host samplers (CPU utilisation, memory), the helper process that runs them, and the system and
device traces written at export."""
