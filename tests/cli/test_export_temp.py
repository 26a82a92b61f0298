"""``export`` never leaves its temporary file: not on an error, not on Ctrl-C, and a killed
export's file is removed by the next export to the same place."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kinetoscope.cli import export as export_cli
from kinetoscope.cli import main

from ..ingest.helpers import kernel, write_session, x


def _profile(tmp_path: Path) -> Path:
    events = [x("aten::mm", 0, 10, **{"External id": 1}), kernel("gemm", 4, 8, correlation=5)]
    write_session(tmp_path / "prof", events)
    return tmp_path / "prof"


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_a_killed_exports_temporary_file_is_removed_by_the_next(tmp_path: Path) -> None:
    # GIVEN the temporary file of an export that was killed while writing (its process is gone)
    profile, out = _profile(tmp_path), tmp_path / "merged.json"
    left = export_cli.export_temp(out, _dead_pid())
    left.write_bytes(b'{"traceEvents": [')
    # WHEN the next export to the same file runs
    assert main(["export", str(profile), "-o", str(out)]) == 0
    # THEN it is written and no temporary file is left
    assert out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merged.json", "prof"]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_export_stopped_while_writing_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    # GIVEN an export that fails (or is interrupted) in the middle of writing
    from kinetoscope.render import export_chrome

    def failing(out: object, *args: object, **kwargs: object) -> None:
        out.write(b"{")  # type: ignore[attr-defined]
        raise error("stopped")

    monkeypatch.setattr(export_chrome, "write_chrome", failing)
    profile, out = _profile(tmp_path), tmp_path / "merged.json"
    try:
        code = main(["export", str(profile), "-o", str(out)])
    except error:
        code = None  # main passes some errors on, and answers Ctrl-C with an exit status
    assert code != 0
    # THEN neither the output nor a temporary file is left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prof"]


def test_a_running_exports_temporary_file_is_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "merged.json"
    running = export_cli.export_temp(out, 1)  # pid 1 runs
    running.write_bytes(b"")
    assert export_cli.remove_dead_temps(out) == []
    assert running.exists()
