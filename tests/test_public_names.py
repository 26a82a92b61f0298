"""Tests reach src through its public names: a test that imports a module's private name (one that
starts with ``_``) ties itself to an implementation detail. Private modules (``_tables``,
``_errors``...) are tested by their own test files, through their public names."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kinetoscope"):
            found += [f"{path.relative_to(TESTS)}:{node.lineno} {node.module}.{alias.name}"
                      for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")
                      and not _is_module(node.module or "", alias.name)]
    return found


def _is_module(package: str, name: str) -> bool:
    folder = TESTS.parent / "src" / Path(*package.split("."))
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def test_no_test_imports_a_private_name_of_src() -> None:
    found = [hit for path in sorted(TESTS.rglob("*.py")) for hit in _private_imports(path)]
    assert found == []
