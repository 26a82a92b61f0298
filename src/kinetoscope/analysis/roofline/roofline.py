"""Achieved FLOP/s and bytes/s per op and input shape against the device's roofline.

Each op instance with a cost model (``analysis/roofline/flops.py``) gets its FLOPs and bytes from its
recorded shapes; its time is the device time of all the work launched under it (its own kernels
and those of the ops inside it), or, on a rank with no device work, its CPU time (``time_source``
says which). Per op name and shape: achieved TFLOP/s and TB/s, arithmetic intensity (FLOPs per
byte), and against the device's peaks (``analysis/roofline/device_peaks.py``) the bound (``compute`` when the
intensity is above the ridge point, else ``memory``) and the share of the attainable rate
reached. Ops that launched device work but have no model follow, with no figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import ints, string_mask
from kinetoscope.analysis._tables.masks import is_in
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis._tables.result_tables import rows
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.ops import attribution, shapes
from kinetoscope.analysis.roofline import device_peaks, flops, gemm_shapes
from kinetoscope.analysis.settings.options import DEFAULT_TOP, TopOptions
from kinetoscope.model import kinds

GPU, CPU = "gpu", "cpu"
_PEAK_CLASS = {"float": "fp32", "c10::Half": "bf16_fp16", "c10::BFloat16": "bf16_fp16"}
# cuDNN runs float convolutions in TF32 by default (torch.backends.cudnn.allow_tf32); matmuls not.
_TF32_OPS = (
    "aten::convolution",
    "aten::_convolution",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::convolution_backward",
)
# Float matmuls run on the tensor cores in TF32 when allowed (torch.backends.cuda.matmul.allow_tf32,
# set_float32_matmul_precision("high")); the kernels say so: CUTLASS's ``tensorop_s1688gemm``
# (a TF32 16x8x8 MMA with fp32 accumulation), cuBLAS's ``..._tf32...``.
TF32_KERNEL = r"(?i)tf32|1688gemm"
_KEYS = ("op", "input_dims", "input_types", "concrete_inputs")


def device_of(tables: Tables, run: str, rank: int) -> tuple[str, device_peaks.Device | None]:
    """(the rank's ``deviceProperties`` name, its table entry or the override; None if unknown)."""
    sessions = tables.get("sessions")
    name = ""
    if sessions is not None and "device_name" in sessions.column_names:
        mine = where(sessions, np.asarray(pc.and_(pc.equal(sessions["run"], run), pc.equal(sessions["rank"], rank))))
        name = next((n for n in mine.column("device_name").to_pylist() if n), "")
    return name, device_peaks.pick(name)


def _op_times(events: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(time of each row: device ns launched under it or CPU ns; rows that launched work directly;
    rows with a TF32 kernel under them; source)."""
    launched = attribution.launches(events)
    none = np.zeros(events.num_rows, dtype=bool)
    if not len(launched.work):
        return ints(events, "dur_ns"), none, none, CPU
    up = attribution.op_parents(events)
    total = attribution.inclusive_time_ns(up, launched.op, launched.dur_ns)
    direct = np.zeros(events.num_rows, dtype=bool)  # a byte per row, not a count's 8
    direct[launched.op[launched.op >= 0]] = True
    tf32 = string_mask(events, "name", lambda names: pc.match_substring_regex(names, TF32_KERNEL))[launched.work]
    if not tf32.any():  # no TF32 kernel: no op has one under it (no walk up the op chains)
        return total, direct, none, GPU
    _, tf32_kernels = attribution.inclusive_ns(up, launched.op[tf32], launched.dur_ns[tf32])
    return total, direct, tf32_kernels > 0, GPU


def shape_rows(events: pa.Table) -> tuple[pa.Table, str]:
    """One row per modelled op and per op that launched device work: ``position`` (in ``events``),
    ``op``, the shape columns, ``time_ns`` (device time launched under it, or CPU time) and
    ``direct`` (it launched device work itself), ``tf32`` (a TF32 tensor-core kernel ran under
    it); and the time source (``gpu`` or ``cpu``). Found once per table inside ``reuse.reusing()``
    (the roofline and the GEMM rules ask)."""
    return reuse.cached(events, "shape_rows", lambda: _shape_rows(events))


def _shape_rows(events: pa.Table) -> tuple[pa.Table, str]:
    time_ns, direct, tf32, source = _op_times(events)
    chosen = is_in(events, "kind", (kinds.OP,)) & (is_in(events, "name", tuple(flops.MODELS)) | direct)
    picked = where(events.select(["name", *shapes.source_columns(events)]), chosen)  # not every column
    found = shapes.input_shapes(picked.select(shapes.source_columns(picked)))
    table = found.add_column(0, "op", picked.column("name").cast(pa.string()))
    table = table.add_column(0, "position", pa.array(np.flatnonzero(chosen), pa.int64()))
    table = table.append_column("time_ns", pa.array(time_ns[chosen], pa.int64()))
    table = table.append_column("direct", pa.array(direct[chosen], pa.bool_()))
    return table.append_column("tf32", pa.array(tf32[chosen], pa.bool_())), source


def _shape_groups(events: pa.Table) -> tuple[list[dict[str, Any]], str]:
    """Calls and time per (op, dims, types, concrete inputs) of the modelled ops and of the ops that
    launched device work."""
    table, source = shape_rows(events)
    aggregates = [("time_ns", "count"), ("time_ns", "sum"), ("tf32", "any")]
    grouped = table.group_by(list(_KEYS), use_threads=False).aggregate(aggregates)
    return grouped.to_pylist(), source


def _merged(groups: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Per (op, dims, types): calls, time and FLOPs and bytes in all (None if any call has no model)."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for group in groups:
        calls = group["time_ns_count"]
        cost = flops.cost(*(group[k] for k in _KEYS))
        key = (group["op"], group["input_dims"] or "", group["input_types"] or "")
        entry = merged.setdefault(
            key, {"calls": 0, "time_ns": 0, "flops": 0, "bytes": 0, "dtype": None, "gemm": None, "tf32": False}
        )
        entry["tf32"] = entry["tf32"] or bool(group["tf32_any"])
        entry["calls"] += calls
        entry["time_ns"] += group["time_ns_sum"]
        if cost is None or entry["flops"] is None:
            entry["flops"] = entry["bytes"] = None
        else:
            entry["flops"] += cost.flops * calls
            entry["bytes"] += cost.moved_bytes * calls
            entry["dtype"], entry["gemm"] = cost.dtype, cost.gemm
    return merged


def peak_class(op: str, dtype: str | None, device: device_peaks.Device | None, tf32: bool = False) -> str | None:
    """The device peak an op of ``dtype`` is held to: ``fp32``, ``tf32``, ``bf16_fp16`` or ``fp8``;
    a float op runs in TF32 when it is a convolution or a TF32 kernel ran under it."""
    peak_class = _PEAK_CLASS.get(dtype or "", "fp8" if "Float8" in (dtype or "") else None)
    if peak_class == "fp32" and (op in _TF32_OPS or tf32) and device is not None and device.tf32_tflops:
        return "tf32"
    return peak_class


def _figures(op: str, entry: dict[str, Any], device: device_peaks.Device | None) -> dict[str, Any]:
    total, moved, time_ns, calls = entry["flops"], entry["bytes"], entry["time_ns"], entry["calls"]
    if total is None:
        return {}
    found: dict[str, Any] = {"flops": total // calls, "moved_bytes": moved // calls}
    found["flops_per_byte"] = round(total / moved, 3) if moved else None
    if time_ns > 0:
        found["tflops_per_s"] = round(total / time_ns / 1e3, 4)
        found["tb_per_s"] = round(moved / time_ns / 1e3, 4)
    if entry["gemm"] is not None:
        found["shape_waste"] = gemm_shapes.waste(entry["gemm"], entry["dtype"], entry["tf32"])
    chosen = peak_class(op, entry["dtype"], device, entry["tf32"])
    peak = device.peak_tflops(chosen) if device is not None and chosen else None
    if device is None or peak is None or not moved:
        return found
    intensity, bandwidth = total / moved, device.memory_tb_per_s
    attainable = attainable_tflops(peak, intensity, bandwidth)
    found.update(peak_class=chosen, peak_tflops_per_s=peak, bound="compute" if attainable >= peak else "memory")
    if "tflops_per_s" in found:
        found["roofline_pct"] = round(100.0 * found["tflops_per_s"] / attainable, 2)
    return found


def attainable_tflops(peak_tflops: float, flops_per_byte: float, memory_tb_per_s: float) -> float:
    """The roofline: min(peak, intensity × bandwidth), in TFLOP/s."""
    return min(peak_tflops, flops_per_byte * memory_tb_per_s)


def _ranked(merged: dict[tuple[str, str, str], dict[str, Any]], top: int) -> list[tuple[Any, dict[str, Any]]]:
    """The ``top`` shapes with a model by time, then the ``top`` without one."""
    ordered = sorted(merged.items(), key=lambda kv: (-kv[1]["time_ns"], kv[0]))
    modelled = [kv for kv in ordered if kv[1]["flops"] is not None]
    return modelled[:top] + [kv for kv in ordered if kv[1]["flops"] is None][:top]


def op_roofline(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, op and input shape: FLOPs and bytes per call from the shapes (null: no model),
    achieved TFLOP/s and TB/s over the device time it launched (CPU time on a CPU-only rank),
    FLOPs per byte, and the peak used (``roofline_devices`` names the device), the bound, the
    share of the attainable rate reached, and for matrix products what in the shape wastes the
    tensor cores (M, N, K off the multiple of 8 for fp16/bf16 or 16 for fp8; tiny batched GEMMs)."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        groups, source = _shape_groups(events)
        device = device_of(tables, run, rank)[1] if source == GPU else None  # CPU time is no GPU's roofline
        for (op, dims, types), entry in _ranked(_merged(groups), options.top):
            base = {"run": run, "rank": rank, "op": op, "input_dims": dims, "input_types": types}
            figures = _figures(op, entry, device)
            records.append(
                {**base, "calls": entry["calls"], "time_ns": entry["time_ns"], "time_source": source, **figures}
            )
    return rows(_SCHEMA, records)


_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("op", pa.string()),
    ("input_dims", pa.string()),
    ("input_types", pa.string()),
    ("calls", pa.int64()),
    ("time_ns", pa.int64()),
    ("time_source", pa.string()),
    ("flops", pa.int64()),
    ("moved_bytes", pa.int64()),
    ("flops_per_byte", pa.float64()),
    ("tflops_per_s", pa.float64()),
    ("tb_per_s", pa.float64()),
    ("peak_class", pa.string()),
    ("bound", pa.string()),
    ("roofline_pct", pa.float64()),
    ("shape_waste", pa.string()),
]


def roofline_devices(tables: Tables) -> pa.Table:
    """Per rank, the device the roofline uses: its ``deviceProperties`` name, the table entry picked
    for it (or set by ``--device``), its peaks and the datasheet they come from."""
    records = []
    for (run, rank), _ in per_rank(tables["events"]):  # the split every analysis shares
        name, device = device_of(tables, run, rank)
        entry = (
            {}
            if device is None
            else {
                "device": device.name,
                **{f"{c}_tflops_per_s": device.peak_tflops(c) for c in device_peaks.PEAK_CLASSES},
                "memory_tb_per_s": device.memory_tb_per_s,
                "source": device.source,
            }
        )
        records.append({"run": run, "rank": rank, "device_name": name, **entry})
    schema = [("run", pa.string()), ("rank", pa.int32()), ("device_name", pa.string()), ("device", pa.string())]
    schema += [(f"{c}_tflops_per_s", pa.float64()) for c in device_peaks.PEAK_CLASSES]
    return rows([*schema, ("memory_tb_per_s", pa.float64()), ("source", pa.string())], records)
