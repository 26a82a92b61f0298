"""``summary --categories FILE`` and ``--device NAME`` reach the analyses; bad ones are reported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kinetoscope.analysis.settings import user_options
from kinetoscope.cli import main
from kinetoscope.cli.environment import CATEGORIES_ENV, DEVICE_ENV

from ..ingest.helpers import kernel, write_session, x

SHAPES = {"Input Dims": [[256, 256], [256, 256]], "Input type": ["float", "float"]}


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    events = [
        x("aten::mm", 0, 50, **SHAPES),
        x("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=1),
        kernel("sgemm_kernel", 20, 10, 1),
    ]
    write_session(tmp_path / "prof", events)
    return tmp_path / "prof"


def _summary(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["summary", *args, "--json", "--only", "time_by_category,op_roofline,roofline_devices"]) == 0
    return {name: body["rows"] for name, body in json.loads(capsys.readouterr().out)["analyses"].items()}


def test_categories_file_and_device_name(profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = _summary(capsys, str(profile))
    assert [r["category"] for r in plain["time_by_category"]] == ["GEMM"]
    assert plain["op_roofline"][0]["bound"] is None  # the trace names no device
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"my products": ["aten::mm"]}))
    found = _summary(capsys, str(profile), "--categories", str(rules), "--device", "H100 SXM")
    assert [(r["category"], r["gpu_ns"]) for r in found["time_by_category"]] == [("my products", 10_000)]
    mm = found["op_roofline"][0]
    # 2·256³ FLOPs in 10 µs: 3.3554 TFLOP/s; 85.3 FLOPs/byte is above the H100's fp32 ridge (67 / 3.35 = 20)
    assert (mm["flops"], mm["time_ns"], mm["tflops_per_s"], mm["bound"]) == (2 * 256**3, 10_000, 3.3554, "compute")
    assert found["roofline_devices"][0]["device"] == "H100 SXM"
    # AND the settings were this summary's only: none is left for the analyses, none in the environment
    assert user_options.given() == user_options.NONE
    assert CATEGORIES_ENV not in os.environ and DEVICE_ENV not in os.environ


def test_the_environment_names_them_where_no_option_does(
    profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the documented variables, read by the command line at its edge
    rules = tmp_path / "rules.toml"
    rules.write_text('"my products" = ["aten::mm"]\n')
    monkeypatch.setenv(CATEGORIES_ENV, str(rules))
    monkeypatch.setenv(DEVICE_ENV, "H100 SXM")
    found = _summary(capsys, str(profile))
    # THEN the analyses get them as options
    assert [r["category"] for r in found["time_by_category"]] == ["my products"]
    assert found["roofline_devices"][0]["device"] == "H100 SXM"
    # AND an option given wins over its variable
    given = _summary(capsys, str(profile), "--device", "A100 SXM 40GB")
    assert given["roofline_devices"][0]["device"] == "A100 SXM 40GB"


def test_unknown_device_is_an_error(profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(profile), "--device", "Z9000", "--only", "op_roofline"]) == 2
    assert "Z9000" in capsys.readouterr().err
