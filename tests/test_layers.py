"""Layer contract: imports point one way, and the capture path stays light."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from .conftest import PYTHON, REPO, python_env

SRC = REPO / "src" / "kinetoscope"
# layer -> layers it may import (besides itself and the package root's _errors/_version)
ALLOWED = {
    "format": set(),
    "model": {"format"},
    "convert": {"format", "model"},
    "importer": {"format", "model", "convert"},
    "capture": {"format", "model", "convert"},
    "neuron": {"capture", "format", "model"},
    "dataset": {"format"},
    "sessions": {"dataset", "format", "model"},
    "ingest": {"sessions", "dataset", "format", "model"},
    "verify": {"sessions", "dataset", "format", "model"},
    "analysis": {"format", "model"},
    "query": {"dataset", "format", "model"},
    "render": {"analysis", "format", "model"},
    "findings": {"analysis", "render", "format", "model"},
    "report": {"query", "analysis", "findings", "render", "ingest", "sessions", "dataset", "format", "model"},
    "viewer": {"ingest", "query", "analysis", "findings", "report", "render", "dataset", "format", "model", "capture"},
    "cli": {
        *("capture", "format", "model", "convert", "importer", "ingest", "dataset", "verify"),
        *("query", "analysis", "render", "viewer", "findings", "report"),
    },
    "agent": {"cli", "query", "viewer", "format", "model"},
    "notebook": {"cli", "query", "report", "viewer", "findings", "format", "model"},
}
HEAVY = ("pyarrow", "duckdb", "pandas", "polars", "starlette", "uvicorn", "rich", "orjson", "numpy")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_layers_import_one_way() -> None:
    problems = []
    for layer, allowed in ALLOWED.items():
        for path in (SRC / layer).rglob("*.py") if (SRC / layer).exists() else []:
            for module in imported_modules(path):
                parts = module.split(".")
                if parts[0] != "kinetoscope" or len(parts) < 2 or parts[1].startswith("_"):
                    continue
                if parts[1] != layer and parts[1] not in allowed:
                    problems.append(f"{path.relative_to(REPO)} imports {module}")
    assert problems == []


def test_capture_never_imports_explorer_dependencies() -> None:
    for path in [*(SRC / "capture").rglob("*.py"), *(SRC / "format").rglob("*.py")]:
        heavy = {m for m in imported_modules(path) if m.split(".")[0] in HEAVY}
        assert not heavy, f"{path} imports {heavy}"


def test_import_kinetoscope_is_cheap() -> None:
    heavy = "{'torch', 'perfetto', 'google'}"
    code = f"import sys, kinetoscope; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}))"
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# Basenames several layers share because each holds its layer's part of one feature (memory history:
# the public `kinetoscope.memory`, its capture, the seed's `torch_neuronx.memory` names, the analyses of
# what it recorded and the viewer's memory pages). cli/ is left out: its modules are named after commands.
SHARED_BASENAMES = {"__init__.py", "memory.py"}


def test_no_two_modules_share_a_basename_for_different_ideas() -> None:
    seen: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        if path.parent.name != "cli" and path.name not in SHARED_BASENAMES and "_proto" not in path.parts:
            seen.setdefault(path.name, []).append(str(path.relative_to(SRC)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_a_command_imports_only_its_own_module() -> None:
    """``kinetoscope summary ...`` builds its parser without importing capture, import or the viewer,
    nor Arrow, the analyses or a process pool: its dataset read starts before they are imported
    (report/prefetch)."""
    code = (
        "import sys; from kinetoscope.cli import get_argument_parser; get_argument_parser('summary'); "
        "print(sorted(m for m in sys.modules if m.startswith('kinetoscope.cli.'))); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'numpy', 'duckdb', 'multiprocessing') "
        "or m.startswith(('kinetoscope.analysis', 'kinetoscope.findings', 'kinetoscope.query'))))"
    )
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, check=True)
    commands, heavy = done.stdout.strip().splitlines()
    cli = ["locations", "sources", "summary"]
    assert commands == repr([f"kinetoscope.cli.{name}" for name in cli])
    assert heavy == "[]"


def test_reading_a_dataset_does_not_load_the_importer(tmp_path: Path) -> None:
    """Raw traces are imported first, but a dataset or profile tree is read without loading import's code."""
    (tmp_path / "_dataset.json").write_text("{}")
    code = (
        "import sys; from pathlib import Path; from kinetoscope.cli.sources import profile_path; "
        f"assert profile_path([Path({str(tmp_path)!r})]) == Path({str(tmp_path)!r}); "
        "print(sorted(m for m in sys.modules if m.startswith(('kinetoscope.importer', 'kinetoscope.convert'))))"
    )
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_layers_private_packages_are_imported_from_inside_it() -> None:
    """A layer's private package (``analysis/_tables``, the analyses' toolkit) is its own: the layers
    above import what they need of it through the public entry (``kinetoscope.analysis.tables``)."""
    problems = []
    for path in SRC.rglob("*.py"):
        layer = path.relative_to(SRC).parts[0]
        for module in imported_modules(path):
            parts = module.split(".")
            private = [part for part in parts[2:] if part.startswith("_") and part not in ("__init__",)]
            if parts[0] == "kinetoscope" and len(parts) > 2 and private and parts[1] != layer:
                problems.append(f"{path.relative_to(REPO)} imports {module}")
    assert problems == []
