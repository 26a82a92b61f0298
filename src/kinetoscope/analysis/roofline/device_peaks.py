"""Peak throughput of common accelerators, for the roofline: dense (no structured sparsity)
tensor-core FLOP/s by dtype and memory bandwidth, each entry citing its vendor datasheet.

Where a datasheet gives only figures with sparsity (marked * there), the dense figure is half of
it. ``None``: the device has no such unit. An MI250X or MI250 is two GCDs that PyTorch sees as two
devices, so a rank's entry is one GCD: half the package's datasheet figures. The device of a rank
is picked from ``sessions.device_name`` (the trace's ``deviceProperties``) by ``MATCH``; the user's device
(``user_options``: ``kinetoscope summary --device``, or the ``KINETOSCOPE_DEVICE`` environment
variable the command line reads) overrides it, with an entry's name or the path of a JSON or TOML
file holding one entry's fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path

from kinetoscope.analysis.settings.settings_files import read_table
from kinetoscope.analysis.settings.user_options import given

PEAK_CLASSES = ("fp32", "tf32", "bf16_fp16", "fp8")


@dataclass(frozen=True)
class Device:
    name: str
    fp32_tflops: float
    tf32_tflops: float | None
    bf16_fp16_tflops: float | None
    fp8_tflops: float | None
    memory_tb_per_s: float
    source: str

    def peak_tflops(self, peak_class: str) -> float | None:
        value: float | None = getattr(self, f"{peak_class}_tflops", None)
        return value


_NV_A100 = "NVIDIA A100 Tensor Core GPU datasheet (SXM): FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS dense"
_NV_H100 = "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): FP32 67; TF32 989*, BF16 1,979*, FP8 3,958* TFLOPS"
_NV_H200 = "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): FP32 67; TF32 989*, BF16 1,979*, FP8 3,958* TFLOPS"
_NV_H100_PCIE = "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe): FP32 51; TF32 756*, BF16 1,513*, FP8 3,026* TFLOPS"
_NV_H100_NVL = "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL): FP32 60; TF32 835*, BF16 1,671*, FP8 3,341* TFLOPS"
_NV_H200_NVL = "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL): FP32 60; TF32 835*, BF16 1,671*, FP8 3,341* TFLOPS"
DEVICES = (
    Device(
        "V100 SXM2",
        15.7,
        None,
        125.0,
        None,
        0.9,
        "NVIDIA Tesla V100 GPU Accelerator datasheet (SXM2): FP32 15.7, Tensor (FP16) 125 TFLOPS, HBM2 900 GB/s",
    ),
    Device(
        "V100 PCIe",
        14.0,
        None,
        112.0,
        None,
        0.9,
        "NVIDIA Tesla V100 GPU Accelerator datasheet (PCIe): FP32 14, Tensor (FP16) 112 TFLOPS, HBM2 900 GB/s",
    ),
    Device("A100 SXM 40GB", 19.5, 156.0, 312.0, None, 1.555, _NV_A100 + "; A100 40GB HBM2 1,555 GB/s"),
    Device("A100 SXM 80GB", 19.5, 156.0, 312.0, None, 2.039, _NV_A100 + "; A100 80GB HBM2e 2,039 GB/s"),
    Device(
        "A100 PCIe 80GB",
        19.5,
        156.0,
        312.0,
        None,
        1.935,
        "NVIDIA A100 Tensor Core GPU datasheet (PCIe): FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS dense; "
        "A100 80GB PCIe HBM2e 1,935 GB/s",
    ),
    Device("H100 SXM", 67.0, 494.5, 989.5, 1979.0, 3.35, _NV_H100 + "; HBM3 3.35 TB/s"),
    Device("H100 PCIe", 51.0, 378.0, 756.5, 1513.0, 2.0, _NV_H100_PCIE + "; HBM2e 2 TB/s"),
    Device("H100 NVL", 60.0, 417.5, 835.5, 1670.5, 3.9, _NV_H100_NVL + "; HBM3 3.9 TB/s"),
    Device("H200 SXM", 67.0, 494.5, 989.5, 1979.0, 4.8, _NV_H200 + "; HBM3e 4.8 TB/s"),
    Device("H200 NVL", 60.0, 417.5, 835.5, 1670.5, 4.8, _NV_H200_NVL + "; HBM3e 4.8 TB/s"),
    Device(
        "B200",
        75.0,
        1125.0,
        2250.0,
        4500.0,
        8.0,
        "NVIDIA HGX B200 datasheet, 8-GPU figures divided by 8: FP32 600 TFLOPS; TF32 18*, BF16/FP16 36*, "
        "FP8 72* PFLOPS; HBM3e 64 TB/s",
    ),
    Device(
        "MI250X",
        47.85,
        None,
        191.5,
        None,
        1.6384,
        "AMD Instinct MI250X accelerator datasheet, package of two GCDs halved (one GCD is one device): "
        "FP32 matrix 95.7, FP16/BF16 383 TFLOPS; HBM2e 3.2768 TB/s",
    ),
    Device(
        "MI250",
        45.25,
        None,
        181.05,
        None,
        1.6384,
        "AMD Instinct MI250 accelerator datasheet, package of two GCDs halved (one GCD is one device): "
        "FP32 matrix 90.5, FP16/BF16 362.1 TFLOPS; HBM2e 3.2768 TB/s",
    ),
    Device(
        "MI300X",
        163.4,
        653.7,
        1307.4,
        2614.9,
        5.3,
        "AMD Instinct MI300X accelerator datasheet: FP32 matrix 163.4, TF32 653.7, FP16/BF16 1,307.4, "
        "FP8 2,614.9 TFLOPS dense; HBM3 5.3 TB/s",
    ),
)
DEVICES_BY_NAME = {device.name: device for device in DEVICES}
# deviceProperties name pattern -> entry, first match wins. ROCm names an MI250 or MI250X GCD
# "AMD Radeon Graphics", which matches nothing: set it with --device. A GB200's B200 is not an
# HGX B200 (its figures differ) and matches nothing either.
MATCH = (
    (r"H200.*NVL", "H200 NVL"),
    (r"H200", "H200 SXM"),
    (r"H100.*NVL", "H100 NVL"),
    (r"H100.*PCIe", "H100 PCIe"),
    (r"H100", "H100 SXM"),
    (r"(?<!G)B200", "B200"),
    (r"A100.*(80GB.*PCIe|PCIe.*80GB)", "A100 PCIe 80GB"),
    (r"A100.*80GB", "A100 SXM 80GB"),
    (r"A100", "A100 SXM 40GB"),
    (r"V100.*PCIE", "V100 PCIe"),
    (r"V100", "V100 SXM2"),
    (r"MI300X", "MI300X"),
    (r"MI250X", "MI250X"),
    (r"MI250", "MI250"),
)


def named(name: str) -> Device:
    """The device ``name`` names: an entry, or a JSON or TOML file of one entry's fields."""
    if name in DEVICES_BY_NAME:
        return DEVICES_BY_NAME[name]
    path = Path(name)
    if path.suffix in (".json", ".toml") and path.exists():
        return from_file(path)
    raise ValueError(f"device {name!r}: not a device ({', '.join(DEVICES_BY_NAME)}) nor a JSON or TOML file")


_NUMBERS = ("fp32_tflops", "tf32_tflops", "bf16_fp16_tflops", "fp8_tflops", "memory_tb_per_s")
_REQUIRED = ("name", "fp32_tflops", "memory_tb_per_s")


def from_file(path: Path) -> Device:
    """One device entry from a JSON or TOML file of its fields (``source`` defaults to the file)."""
    data = read_table(path, "device")
    known = {f.name for f in fields(Device)}
    unknown = sorted(set(data) - known)
    missing = [name for name in _REQUIRED if name not in data]
    if unknown or missing:
        raise ValueError(f"{path}: unknown fields {unknown}, missing fields {missing} (fields: {', '.join(known)})")
    wrong = [k for k in _NUMBERS if data.get(k) is not None and (isinstance(data[k], bool) or not _number(data[k]))]
    if wrong or not isinstance(data["name"], str):
        raise ValueError(f"{path}: name must be text and {', '.join(_NUMBERS)} numbers (wrong: {wrong or ['name']})")
    entry = {"tf32_tflops": None, "bf16_fp16_tflops": None, "fp8_tflops": None, "source": f"user file {path}", **data}
    return Device(**entry)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and value >= 0


def pick(device_name: str) -> Device | None:
    """The entry for a ``deviceProperties`` name (the user's device first); None when unknown."""
    chosen = given().device
    if chosen is not None:
        return chosen
    for pattern, name in MATCH:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return DEVICES_BY_NAME[name]
    return None
