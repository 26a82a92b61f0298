"""The rules against the hardware on public GPU traces with shapes: silent at their defaults where a
reader of the trace finds no GEMM worth fixing, and, with the bars lowered, the GEMMs and rates a
reader computes by hand from the trace (docs/findings.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.analysis.roofline import device_peaks
from kinetoscope.cli import main

from ..conftest import SHARED
from ..ingest.helpers import kernel, write_session, x
from .test_public_traces import findings_json

A100_TRACE = SHARED / "datasets/public-traces/hta/tests/data/negative_queue_length_values_check/rank0.json.gz"
RULES = "gemm_below_roofline,tensor_core_shapes"
LOWERED = ("--set", "gemm_below_roofline.min_gain_pct=0", "--set", "gemm_below_roofline.min_ideal_us=0")


def _rules(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["rule"]: f for f in document["findings"]}


def test_dlrm_gemms_are_too_small_to_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # DLRM on a V100, batch 16: every GEMM is float (no tensor-core shape rule) and tiny: the largest,
    # [16,512] @ [512,512], is 8.4 MFLOP, 1.2 µs even at the 6.8 TFLOP/s the memory roofline allows
    trace = "dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"
    assert _rules(findings_json(trace, tmp_path / "a", capsys, "--rules", RULES)) == {}
    lowered = _rules(findings_json(trace, tmp_path / "b", capsys, "--rules", RULES, *LOWERED))
    worst = lowered["gemm_below_roofline"]["seen"]["groups"][0]
    assert (worst["op"], worst["input_dims"], worst["time_ns"]) == ("aten::mm", "[[16,512],[512,512]]", 23_000)
    assert worst["tflops_per_s"] == round(2 * 16 * 512 * 512 / 23_000 / 1e3, 3)  # 0.365
    assert worst["bound"] == "memory"  # 2·16·512·512 FLOPs over (16·512 + 512·512 + 16·512)·4 bytes: 7.5 per byte
    assert lowered["gemm_below_roofline"]["seen"]["device"] == "V100 SXM2"


def test_a100_tf32_gemms_are_held_to_the_tf32_roofline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not A100_TRACE.exists():
        pytest.skip("public trace corpus not present")
    # GIVEN rank 0 of a 16-rank A100 job whose float GEMMs run CUTLASS tensorop_s1688gemm (TF32) kernels
    local = tmp_path / "traces"
    local.mkdir()
    shutil.copy(A100_TRACE, local / A100_TRACE.name)
    args = ["--rules", RULES, *LOWERED]
    assert main(["import", str(local / A100_TRACE.name), "--out", str(tmp_path / "prof")]) == 0
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 0
    capsys.readouterr()
    assert main(["findings", str(tmp_path / "ds"), "--json", "--rules", RULES]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []  # GEMMs: 2 ms of 438 ms device busy time
    assert main(["findings", str(tmp_path / "ds"), "--json", *args]) == 0
    (found,) = json.loads(capsys.readouterr().out)["findings"]
    worst = found["seen"]["groups"][0]
    # THEN [64,4096] @ [4096,2798]: 30.8 FLOPs per byte x 2.039 TB/s = 62.8 TFLOP/s attainable (under
    # the 156 TF32 peak: memory-bound); 5 calls in 732 µs reach 10.0 TFLOP/s, 16% of it
    assert (worst["op"], worst["input_dims"], worst["calls"], worst["time_ns"]) == (
        "aten::mm",
        "[[64,4096],[4096,2798]]",
        5,
        732_000,
    )
    assert worst["bound"] == "memory" and worst["attainable_tflops_per_s"] == pytest.approx(62.8, abs=0.1)
    assert worst["roofline_pct"] == pytest.approx(15.95, abs=0.01)
    assert found["seen"]["device_busy_ns"] == 438_424_000


def test_the_device_can_be_named_for_a_trace_that_names_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a trace whose deviceProperties name no device: one float 4096³ GEMM kernel of 100 ms
    monkeypatch.delenv(device_peaks.ENV_VAR, raising=False)
    shapes = {"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["float", "float"]}
    events = [
        x("aten::mm", 0, 100_050, **shapes),
        x("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=1),
        kernel("ampere_sgemm_128x64_nn", 20, 100_000, 1),
    ]
    write_session(tmp_path / "prof", events)
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 0
    capsys.readouterr()
    # WHEN the rules run without a device, and with --device naming an A100
    assert main(["findings", str(tmp_path / "ds"), "--json", "--rules", "gemm_below_roofline"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
    assert main(["findings", str(tmp_path / "ds"), "--json", "--device", "A100 SXM 40GB"]) == 0
    (found,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"] == "gemm_below_roofline"]
    # THEN 1.37 TFLOP/s against the 19.5 fp32 peak: 7%
    assert found["seen"]["device"] == "A100 SXM 40GB"
    assert found["seen"]["groups"][0]["roofline_pct"] == round(100 * 2 * 4096**3 / 100e6 / 1e3 / 19.5, 2)
    assert main(["findings", str(tmp_path / "ds"), "--device", "no such GPU"]) == 2
    assert device_peaks.ENV_VAR not in os.environ  # set for the command only
