"""CUDA/HIP graphs: the captures in a trace (``graph_capture``), replayed work matched to them
(``graph_match``), each replayed kernel with the op that captured it (``graph_kernels``), and the
replay analyses (``cuda_graphs``)."""
