"""The framework ops: their host time (``host``), the device time rolled up to the ops that
launched it (``attribution``), their input shapes (``shapes``), their place in the op tree
(``op_paths``), and the forward ops recomputed in backward (``recompute``)."""
