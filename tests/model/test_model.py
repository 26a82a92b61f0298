"""The event model's rules on tiny inputs: kinds, ids, times, collectives, nearest op and self time."""

from __future__ import annotations

import numpy as np
import pytest

from kinetoscope.ingest.rows.columns import epoch_ns
from kinetoscope.model import collectives, kinds, ops
from kinetoscope.model.scalars import as_int, us_to_ns

K = kinds.KIND_CODES


@pytest.mark.parametrize(
    ("value", "expected"),
    [(7, 7), ("7", 7), ("7 ", 7), ("stream 7", 7), ("0x1f", 31), (3.0, 3), (3.5, None), (True, None), ("x", None)],
)
def test_ids_are_read_one_way(value: object, expected: int | None) -> None:
    assert as_int(value) == expected


def test_scalar_and_column_times_agree_to_the_nanosecond() -> None:
    # epoch µs with a fraction: round(ts * 1000) is off by a few ns here (the product passes 2^53)
    values = [1716423322422879.25, 1712195495997017.75, 5172030936568.347, 12.0005]
    column = epoch_ns(np.asarray(values), 5).tolist()
    assert [us_to_ns(v, 5) for v in values] == column
    assert us_to_ns(1716423322422879.25) == 1716423322422879250 != round(1716423322422879.25 * 1000)
    assert us_to_ns(12, 5) == 12005


@pytest.mark.parametrize(
    ("category", "name", "ph", "rule"),
    [
        ("kernel", "gemm", "X", ("device", "kernel")),
        ("gpu_user_annotation", "ProfilerStep#6", "X", ("device", "device_annotation")),
        ("gpu_user_annotation", "nccl:all_reduce", "X", ("device", "device_annotation")),
        ("user_annotation", "nccl:all_reduce", "X", ("runtime", "collective")),
        ("cpu_instant_event", "[memory]", "i", ("runtime", "allocation")),
        ("xpu_driver", "zeCommandListAppendLaunchKernel", "X", ("runtime", "driver")),
        ("cuda_event", "cudaEventRecord", "X", ("runtime", "runtime")),
        ("python_function", "train.py(3): step", "X", ("framework", "python")),
        ("record_param_comms", "record_param_comms", "X", None),
        ("ac2g", "ac2g", "s", None),
    ],
)
def test_one_rule_places_every_event(category: str, name: str, ph: str, rule: tuple[str, str] | None) -> None:
    assert kinds.rule(category, name, ph) == rule


def test_collectives_of_nccl_gloo_and_symmetric_memory_kernels() -> None:
    assert collectives.spelled("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)") == "allreduce"
    assert collectives.spelled("gloo:all_reduce") == "allreduce"
    assert collectives.spelled("void c10d::symmetric_memory::multimem_all_reduce_kernel<...>") == "allreduce"
    assert collectives.spelled("void vllm::cross_device_reduce_1stage<float, 8>") == "allreduce"
    assert collectives.spelled("void at::native::vectorized_elementwise_kernel<4>") == ""
    assert collectives.of_op("symm_mem::multimem_all_reduce_") == "allreduce"
    assert collectives.of_op("vllm::all_reduce") == "allreduce"
    assert collectives.of_op("aten::mm") == ""


def _tree() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # 0 aten::linear (op, 100) > 1 python frame (40) > 2 aten::mm (op, 30) > 3 cudaLaunchKernel (runtime, 5)
    #                          > 4 aten::add (op, 20)
    parent = np.asarray([-1, 0, 1, 2, 0])
    kind = np.asarray([K["op"], K["python"], K["op"], K["runtime"], K["op"]])
    dur = np.asarray([100, 40, 30, 5, 20])
    return parent, kind, dur


def test_self_time_subtracts_ops_under_python_frames_as_key_averages_does() -> None:
    parent, kind, dur = _tree()
    # aten::linear loses aten::mm (under the Python frame) and aten::add: 100 - 30 - 20
    assert ops.self_ns(dur, parent, kind).tolist() == [50, 10, 25, 5, 20]


def test_nearest_op_skips_python_frames_and_device_rows_take_their_launchers_op() -> None:
    parent, kind, _ = _tree()
    parent, kind = np.append(parent, -1), np.append(kind, K["kernel"])  # 5: a kernel launched by row 3
    launcher = np.asarray([-1, -1, -1, -1, -1, 3])
    assert ops.op_of(parent, kind, launcher).tolist() == [-1, 0, 0, 2, 0, 2]


def test_a_timestamp_written_as_a_string_is_read_as_the_column_form_reads_it() -> None:
    from kinetoscope.ingest.rows.side_rows import scalar_ns
    from kinetoscope.model import execution

    # torch_npu's trace_view.json writes "ts" as strings of µs
    for text in ("1760000000000100.000", "12.5", "7"):
        assert execution.to_ns(text, 0) == scalar_ns(text, 0)
    assert execution.to_ns("12.5", 1_000) == 13_500
