"""The generated protobuf modules match proto/ (run scripts/gen_proto.sh after editing a .proto)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ..conftest import REPO


def test_generated_code_is_current(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    if shutil.which("protoc-gen-mypy", path=str(Path(__import__("sys").executable).parent)) is None:
        pytest.skip("mypy-protobuf is not installed")
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "proto", copy / "proto")
    shutil.copytree(REPO / "scripts", copy / "scripts")
    (copy / "src/kinetoscope/format/_proto").mkdir(parents=True)
    env = {"PYTHON": __import__("sys").executable, "PATH": "/usr/bin:/bin"}
    subprocess.run(["bash", str(copy / "scripts/gen_proto.sh")], env=env, check=True, capture_output=True)
    for generated in (copy / "src/kinetoscope/format/_proto").iterdir():
        committed = REPO / "src/kinetoscope/format/_proto" / generated.name
        assert committed.read_text() == generated.read_text(), f"{committed.name} is stale: run scripts/gen_proto.sh"
