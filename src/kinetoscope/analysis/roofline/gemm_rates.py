"""The matrix products of one rank, grouped by op and shape, with achieved and attainable rates.

Only the ops that launched their kernels themselves count (``aten::mm`` under ``aten::linear``,
not the ``aten::linear`` too), so each GEMM kernel's time is counted once. A group's time is the
device time of the kernels launched under its op instances; FLOPs and bytes come from
``analysis/roofline/flops.py``; the attainable rate is the roofline of the rank's device for the GEMM's
dtype (``analysis/roofline/roofline.py``). Used by the GEMM findings rules.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import code_groups
from kinetoscope.analysis._tables.column_arrays import codes, encoded
from kinetoscope.analysis.roofline import device_peaks, flops, gemm_shapes, roofline

NS_PER_S = 1e9
# The ops whose model in ``analysis/roofline/flops.py`` is a matrix product (its cost has a ``gemm``): the
# other modelled ops (elementwise, reductions, norms, convolutions, attention) are not grouped.
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::_scaled_mm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear")


@dataclass(frozen=True, eq=False)
class GemmGroup:
    """The instances of one GEMM op with one shape and dtype on one rank."""

    op: str
    input_dims: str
    dtype: str
    gemm: flops.Gemm
    calls: int
    time_ns: int
    flops: int  # all calls together
    moved_bytes: int
    positions: np.ndarray  # rows of the op instances in the rank's events
    peak_class: str | None
    peak_tflops_per_s: float | None  # None: the device or its peak for the dtype is unknown
    attainable_tflops_per_s: float | None

    @property
    def tflops_per_s(self) -> float:
        return self.flops / self.time_ns / 1e3 if self.time_ns > 0 else 0.0

    @property
    def roofline_pct(self) -> float | None:
        if not self.attainable_tflops_per_s:
            return None
        return 100.0 * self.tflops_per_s / self.attainable_tflops_per_s

    @property
    def bound(self) -> str | None:
        if self.attainable_tflops_per_s is None or self.peak_tflops_per_s is None:
            return None
        return "memory" if self.attainable_tflops_per_s < self.peak_tflops_per_s else "compute"

    def time_at_ns(self, pct_of_attainable: float) -> int | None:
        """The time these FLOPs take at ``pct_of_attainable`` of the attainable rate (None: unknown)."""
        if not self.attainable_tflops_per_s or pct_of_attainable <= 0:
            return None
        return int(self.flops / (self.attainable_tflops_per_s * 1e12 * pct_of_attainable / 100) * NS_PER_S)

    @property
    def waste(self) -> str | None:
        return gemm_shapes.waste(self.gemm, self.dtype, self.peak_class == "tf32")

    def describe(self) -> dict[str, object]:
        pct = self.roofline_pct
        return {
            "op": self.op,
            "input_dims": self.input_dims,
            "dtype": self.dtype,
            "calls": self.calls,
            "time_ns": self.time_ns,
            "tflops_per_s": round(self.tflops_per_s, 3),
            "attainable_tflops_per_s": None
            if self.attainable_tflops_per_s is None
            else round(self.attainable_tflops_per_s, 3),
            "roofline_pct": None if pct is None else round(pct, 2),
            "bound": self.bound,
        }


def gemm_groups(events: pa.Table, device: device_peaks.Device | None) -> list[GemmGroup]:
    """The rank's GEMM groups, most device time first; none on a rank without device work."""
    rows, source = roofline.shape_rows(events)
    if source != roofline.GPU:
        return []
    name_code, names = codes(events, "name")
    op_code = name_code[rows["position"].to_numpy()]
    products = np.asarray([name in GEMM_OPS for name in names] or [False], dtype=bool)  # over distinct names
    keep = np.asarray(rows["direct"].to_numpy(zero_copy_only=False), dtype=bool) & products[op_code]
    if not keep.any():
        return []
    rows = rows.filter(pa.array(keep))
    # a GEMM's cost does not depend on its concrete inputs: grouped by op, dims and types
    keys = [(op_code[keep], names), *(_text_codes(rows[k]) for k in ("input_dims", "input_types"))]
    group, count = code_groups.grouped([code for code, _ in keys], [len(values) for _, values in keys])
    positions, time_ns = rows["position"].to_numpy(), rows["time_ns"].to_numpy()
    tf32 = np.asarray(rows["tf32"].to_numpy(zero_copy_only=False), dtype=bool)
    order = np.argsort(group, kind="stable")  # each group's rows in row order
    bounds = np.searchsorted(group[order], np.arange(count + 1))
    first = order[bounds[:-1]]  # each group's first row
    found = []
    for at in np.argsort(first, kind="stable").tolist():  # the groups in the order they first occur
        op, dims, types = (values[code[first[at]]] for code, values in keys)
        cost = flops.cost(op, dims, types, None)
        if cost is None or cost.gemm is None:
            continue
        mine = order[bounds[at] : bounds[at + 1]]
        chosen = roofline.peak_class(op, cost.dtype, device, bool(tf32[mine].any()))
        found.append(_group(op, dims, cost, positions[mine], time_ns=int(time_ns[mine].sum()), peak=(device, chosen)))
    return sorted(found, key=lambda g: (-g.time_ns, g.op, g.input_dims))


def _text_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """A string column's codes and distinct values, null read as ``""``."""
    code, distinct = encoded(pc.fill_null(column, ""))
    return code, [str(value) for value in distinct.to_pylist()]


def _group(
    op: str,
    dims: str,
    cost: flops.Cost,
    at: np.ndarray,
    *,
    time_ns: int,
    peak: tuple[device_peaks.Device | None, str | None],
) -> GemmGroup:
    """The group of ``at``; ``peak``: the rank's device and the peak class the GEMM is held to."""
    assert cost.gemm is not None
    device, chosen = peak
    peak_tflops = device.peak_tflops(chosen) if device is not None and chosen else None
    attainable = None
    if device is not None and peak_tflops is not None and cost.moved_bytes:
        attainable = roofline.attainable_tflops(peak_tflops, cost.flops / cost.moved_bytes, device.memory_tb_per_s)
    calls = len(at)
    totals = (cost.flops * calls, cost.moved_bytes * calls)
    return GemmGroup(op, dims, cost.dtype, cost.gemm, calls, time_ns, *totals, at, chosen, peak_tflops, attainable)
