"""``kinetoscope demo``: the README's main job, run as a user would."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kinetoscope.format.session_files import trace_info as ti

from ..capture.helpers import check_complete_session
from ..conftest import PYTHON, python_env


def test_demo_profiles_and_describes_a_session(tmp_path: Path) -> None:
    done = subprocess.run(
        [PYTHON, "-m", "kinetoscope", "demo", "--out", str(tmp_path), "--steps", "2"],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (session,) = tmp_path.glob("*/*")
    assert f"Session: {session}" in done.stdout
    for name in ("trace.json", "ntrace.pb", "cpu_util.pb", "host_mem.pb"):
        assert name in done.stdout
    assert "Top framework ops" in done.stdout and "aten::" in done.stdout
    info = check_complete_session(session)
    assert [ti.mode_name(m.mode) for m in info.modes] == ["DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY"]
