"""The part of JSON Schema the published schemas (docs/*.schema.json) use, for tests without the
jsonschema package: type (one or a list), const, enum, pattern, minimum, required, properties,
additionalProperties (a boolean or a schema) and items."""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}


def _is(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[name])


def validate(value: Any, schema: dict[str, Any], where: str = "$") -> None:
    """Raises AssertionError (naming where) unless ``value`` matches ``schema``."""
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        assert any(_is(value, name) for name in names), (where, value, names)
    assert "const" not in schema or value == schema["const"], where
    assert "enum" not in schema or value in schema["enum"], where
    assert "pattern" not in schema or re.search(schema["pattern"], value), (where, value)
    assert "minimum" not in schema or value >= schema["minimum"], where
    if isinstance(value, dict):
        _validate_object(value, schema, where)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], f"{where}[{i}]")


def _validate_object(value: dict[str, Any], schema: dict[str, Any], where: str) -> None:
    assert set(schema.get("required", ())) <= set(value), (where, set(schema["required"]) - set(value))
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            validate(item, properties[key], f"{where}.{key}")
        elif isinstance(extra, dict):
            validate(item, extra, f"{where}.{key}")
        else:
            assert extra, (where, f"unexpected key {key!r}")
