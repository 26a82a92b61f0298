"""The small files users write to override built-in tables (op categories, device peaks): one
table of keys, as JSON or, on Python 3.11+, TOML (by the file's suffix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_table(path: Path, what: str) -> dict[str, Any]:
    """The file's top-level table; ValueError naming the file (and ``what`` it should hold) when it
    cannot be read or is not a table."""
    try:
        text = path.read_text()
        data = _toml(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable {what} file: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table of {what} entries, not {type(data).__name__}")
    return data


def _toml(text: str) -> object:
    import tomllib  # Python 3.11+; JSON files work everywhere

    return tomllib.loads(text)
