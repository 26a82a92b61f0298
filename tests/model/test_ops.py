"""Self time and torch's same-name fold (``model.ops``) on the shapes real traces record."""

from __future__ import annotations

import numpy as np

from kinetoscope.model import kinds, ops

K = kinds.KIND_CODES


def test_collective_scope_inside_record_param_comms_is_a_node_of_the_op_tree() -> None:
    # A NCCL all-reduce as DLRM's rank 0 records it (µs): record_param_comms (79) holds
    # cudaStreamIsCapturing (1), cudaStreamWaitEvent (1) and the nccl:all_reduce scope (59), which holds
    # the calls that launch the kernel: cudaStreamWaitEvent 1, cudaLaunchKernel 7, cudaStreamWaitEvent 0, 1.
    parent = np.asarray([-1, 0, 0, 0, 3, 3, 3, 3])
    kind = np.asarray([K["op"], K["runtime"], K["runtime"], K["collective"], *[K["runtime"]] * 4])
    dur = np.asarray([79, 1, 1, 59, 1, 7, 0, 1])
    got = ops.self_ns(dur, parent, kind)
    # torch: a node's self time is its time minus its children's (profiler_util.FunctionEvent)
    assert got[0] == 79 - (1 + 1 + 59)  # 18, not 79 - 1 - 1 - (1 + 7 + 0 + 1) = 68
    assert got[3] == 59 - (1 + 7 + 0 + 1)


def test_same_name_fold_counts_runtime_children_as_torch_does() -> None:
    # 0 aten::copy_ > 1 aten::copy_ (only child: folded) > 2 cudaMemcpyAsync
    # 3 aten::to > 4 aten::to + 5 cudaStreamSynchronize (two children: not folded)
    # 6 aten::sum > 7 Python frame > 8 aten::sum (only op-tree child through the frame: folded)
    parent = np.asarray([-1, 0, 1, -1, 3, 3, -1, 6, 7])
    kind = np.asarray([K["op"], K["op"], K["runtime"], K["op"], K["op"], K["sync"], K["op"], K["python"], K["op"]])
    name = np.asarray([1, 1, 2, 3, 3, 4, 5, 6, 5])
    folded, keeper = ops.repeats(parent, name, ops.in_op_tree(kind))
    assert np.flatnonzero(folded).tolist() == [1, 8]
    assert keeper[[1, 8]].tolist() == [0, 6]
    self_ns = np.asarray([2, 5, 10, 20, 8, 3, 4, 9, 6])
    moved = ops.folded_self_ns(self_ns, folded, keeper)
    assert moved.tolist() == [7, 0, 10, 20, 8, 3, 10, 9, 0]


def test_a_chain_of_repeats_folds_into_its_top() -> None:
    parent = np.asarray([-1, 0, 1])
    kind = np.full(3, K["op"])
    folded, keeper = ops.repeats(parent, np.zeros(3, np.int64), ops.in_op_tree(kind))
    assert folded.tolist() == [False, True, True] and keeper[1:].tolist() == [0, 0]


def test_every_profiler_step_is_one_key_as_in_key_averages() -> None:
    assert ops.averages_key("ProfilerStep#12") == ops.averages_key("ProfilerStep#13") == "ProfilerStep*"
    assert ops.averages_key("aten::mm") == "aten::mm"


def _both(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return parent.astype(np.int64), parent.astype(np.int32)


def test_positions_in_32_bits_give_the_same_ops_and_self_times_in_32_bits() -> None:
    # GIVEN a nested tree of ops, a Python frame and runtime calls, its parents in int64 and in int32
    kind = np.asarray([kinds.KIND_CODES[k] for k in (kinds.OP, kinds.PYTHON, kinds.OP, kinds.RUNTIME_CALL)])
    parent = np.asarray([-1, 0, 1, 2])
    dur_ns = np.asarray([100, 80, 50, 10])
    assert ops.position_dtype(4) == np.int32 and ops.position_dtype(2**31) == np.int64
    # WHEN each row's op and self time are found from either
    wide, narrow = ((ops.op_of(p, kind, np.full(4, -1)), ops.self_ns(dur_ns, p, kind)) for p in _both(parent))
    # THEN the same values, the positions held in the parents' 32 bits (half the bytes per row)
    assert wide[0].tolist() == narrow[0].tolist() == [-1, 0, 0, 2]
    assert wide[1].tolist() == narrow[1].tolist() == [50, 30, 40, 10]
    assert wide[0].dtype == np.int64 and narrow[0].dtype == np.int32
