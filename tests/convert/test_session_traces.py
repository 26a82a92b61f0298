"""The conversion to `.pb` files stays on the capture path's light imports while it takes track
names and lane packing from the model."""

from __future__ import annotations

import subprocess

from kinetoscope.convert import session_traces
from kinetoscope.model import track_names, tracks

from ..conftest import PYTHON, python_env


def test_the_conversion_imports_no_explorer_dependency() -> None:
    heavy = ("numpy", "pyarrow", "duckdb")
    code = f"import sys, kinetoscope.convert.session_traces; print([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_it_names_tracks_as_the_dataset_does() -> None:
    assert session_traces.model_tracks is track_names
    assert tracks.device_track_name is track_names.device_track_name and tracks.Lanes is track_names.Lanes
