"""Where torch.compile is pointed: torch loads compiled code from there, so only a private folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kinetoscope import SessionError
from kinetoscope.capture.compiled.artifacts import point_torch_compile_at


def test_torch_compile_is_pointed_only_at_a_private_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # anyone could plant compiled kernels there
    with pytest.raises(SessionError, match=r"artifact_cache_dir: .*not a private folder"):
        point_torch_compile_at(shared)
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ
    point_torch_compile_at(tmp_path / "mine")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
    assert (tmp_path / "mine").stat().st_mode & 0o777 == 0o700
