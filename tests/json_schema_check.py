"""A minimal JSON Schema check for the published schemas (type, const, enum, required,
properties, $ref, additionalProperties, items, minimum): enough to fail when a report leaves its schema."""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[name])


def validate(  # noqa: PLR0912 - one branch per keyword reads best
    value: Any, schema: dict[str, Any], where: str = "$", root: dict[str, Any] | None = None
) -> None:
    """Raises AssertionError naming the first place where ``value`` leaves ``schema`` (``$ref``:
    ``#/$defs/NAME`` of the root schema)."""
    root = root or schema
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        assert any(_is(value, n) for n in names), f"{where}: {value!r} is not {names}"
    if "const" in schema:
        assert value == schema["const"], f"{where}: {value!r} != {schema['const']!r}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if "minimum" in schema and _is(value, "number"):
        assert value >= schema["minimum"], f"{where}: {value!r} < {schema['minimum']}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key!r}"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                validate(item, properties[key], f"{where}.{key}", root)
            elif extra is False:
                raise AssertionError(f"{where}: unexpected {key!r}")
            elif isinstance(extra, dict):
                validate(item, extra, f"{where}.{key}", root)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], f"{where}[{i}]", root)
