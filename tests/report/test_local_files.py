"""A summary of local files leaves pyarrow's object-store file systems (S3's, with OpenSSL) and its
dataset module unloaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kinetoscope.report.local_files import OBJECT_STORE_MODULES

from ..conftest import PYTHON, python_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")

_LOADED = """
import sys, pyarrow.fs, pyarrow.parquet, pyarrow.dataset
maps = open("/proc/self/maps").read()
print(sys.modules.get("pyarrow._s3fs") is not None, "libarrow_s3" in maps, "S3FileSystem" in dir(pyarrow.fs))
"""


def _printed(code: str) -> list[str]:
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, timeout=120,
                          check=True)  # fmt: skip
    return done.stdout.split()


def _small_dataset(tmp_path: Path) -> Path:
    from ..cli.test_summary_golden import _ingested
    from ..ingest.helpers import import_scenario

    dataset: Path = _ingested(import_scenario("import-cpu-gloo", tmp_path / "prof"), tmp_path / "ds")
    return dataset


def _after_summary(dataset: Path, *, as_the_command: bool, then: str) -> str:
    """Python that summarises ``dataset`` (as the command line's own process, or as a caller's
    ``main([...])``), its output left out, then runs ``then``."""
    call = "main()" if as_the_command else f"main(['summary', {str(dataset)!r}])"
    argv = f"sys.argv = ['kinetoscope', 'summary', {str(dataset)!r}]\n" if as_the_command else ""
    return (
        f"import contextlib, io, sys\nfrom kinetoscope.cli import main\n{argv}"
        f"with contextlib.redirect_stdout(io.StringIO()): assert {call} == 0\n{then}"
    )


def test_the_object_stores_stay_unloaded_where_pyarrow_fs_is_not_loaded_yet() -> None:
    asked = "from kinetoscope.report.local_files import local_files_only\nprint(local_files_only())"
    printed = _printed(asked + _LOADED)
    assert printed == ["True", "False", "False", "False"]


def test_acero_groups_tables_without_the_dataset_module_which_stays_importable() -> None:
    code = (
        "import sys\nfrom kinetoscope.report.local_files import local_files_only\nlocal_files_only()\n"
        "import pyarrow as pa\nprint('pyarrow.dataset' in sys.modules)\n"
        "t = pa.table({'k': [1, 2, 1], 'v': [1.0, 5.0, 3.0]})\n"
        "t = t.group_by('k', use_threads=False).aggregate([('v', 'max')])\n"
        "print(t.to_pydict() == {'k': [1, 2], 'v_max': [3.0, 5.0]}, 'pyarrow.dataset' in sys.modules)\n"
        "import pyarrow.dataset\nprint(pyarrow.dataset.dataset([pa.table({'a': [1]})]).to_table().num_rows)"
    )
    assert _printed(code) == ["False", "True", "False", "1"]


def test_nothing_changes_once_pyarrow_fs_is_loaded() -> None:
    printed = _printed(
        "import pyarrow.fs\nfrom kinetoscope.report.local_files import local_files_only\nprint(local_files_only())"
        + _LOADED
    )
    assert printed[0] == "False"
    assert printed[1:] == _printed(_LOADED)  # as in a process that never asked


def test_the_summary_command_of_a_local_dataset_loads_no_object_store(tmp_path: Path) -> None:
    # GIVEN a small ingested dataset
    dataset = _small_dataset(tmp_path)
    # WHEN the command line's own process summarises it, THEN no object-store module was imported
    code = _after_summary(
        dataset, as_the_command=True,
        then=f"print(*[name in sys.modules and sys.modules[name] is None for name in {OBJECT_STORE_MODULES!r}])\n"
        "print('libarrow_s3' in open('/proc/self/maps').read(), 'pyarrow.dataset' in sys.modules)",
    )  # fmt: skip
    # AND its parts were read without an Arrow dataset
    assert _printed(code) == ["True"] * len(OBJECT_STORE_MODULES) + ["False", "False"]


def test_a_summary_called_in_a_process_keeps_its_object_stores(tmp_path: Path) -> None:
    # a caller's process (a notebook, the agent) may read an object store afterwards
    dataset = _small_dataset(tmp_path)
    code = _after_summary(
        dataset, as_the_command=False,
        then="import pyarrow.fs\nprint('S3FileSystem' in dir(pyarrow.fs), 'pyarrow._s3fs' in sys.modules)",
    )  # fmt: skip
    plain = "import sys, pyarrow.fs\nprint('S3FileSystem' in dir(pyarrow.fs), 'pyarrow._s3fs' in sys.modules)"
    assert _printed(code) == _printed(plain)
