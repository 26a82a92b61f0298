"""Achieved against attainable rates: FLOPs and bytes per op from its shapes (``flops``), the
accelerators' peaks (``device_peaks``), the roofline per op and shape (``roofline``), and the
matrix products grouped and rated, with the shapes that waste tensor cores (``gemm_rates``,
``gemm_shapes``)."""
