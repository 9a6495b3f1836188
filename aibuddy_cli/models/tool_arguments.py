"""A model's tool arguments checked against the JSON schema the tool declares, before it runs.

A model may send anything: a number where a filter text is due, a list for a table name, an
argument the tool does not have. Every tool declares its arguments once (`Tool.parameters`), and
this one check, derived from that declaration, refuses what does not fit with a message the model
can act on ("filter must be a string, not a number"), so no tool meets a value of a kind it does
not expect. The subset of JSON schema the tools use: type (string, integer, number, boolean,
array, object), items, properties, required, enum, anyOf. Numeric bounds (minimum, maximum) are
the tools' own: they clamp or refuse with their own words; so are the values of an enum, for a
caller that leaves them to the tools (the MCP server: `values=False`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

_KINDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def check_arguments(
    schema: Mapping[str, Any], arguments: dict[str, Any], *, values: bool = True
) -> dict[str, Any]:
    """arguments, checked against a tool's parameters schema (an object schema): ValueError naming
    the first argument that does not fit. Whole numbers sent as 5.0 come back as 5. values=False:
    the kinds only, an enum's values left to the tool (which refuses them in its own words)."""
    properties = schema.get("properties") or {}
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        accepted = ", ".join(properties) or "none"
        raise ValueError(f"unknown argument {unknown[0]!r} (the arguments are: {accepted})")
    for name in schema.get("required") or ():
        if arguments.get(name) is None:
            raise ValueError(f"{name} must be {_expected(properties.get(name) or {})} (it is required)")
    return {
        name: value if value is None else _checked(properties[name], value, name, values)
        for name, value in arguments.items()
    }


def json_text_read(schema: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """arguments with a list or an object sent as its JSON text (the string '["a"]': some MCP
    clients, Claude Desktop among them, send them so) read as that value, for an argument whose
    schema takes no string; any other value as it came."""
    properties = schema.get("properties") or {}
    read = dict(arguments)
    for name, value in arguments.items():
        declared = properties.get(name)
        if not isinstance(value, str) or declared is None or _takes_string(declared):
            continue
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            continue
        if isinstance(parsed, list | dict):
            read[name] = parsed
    return read


def _takes_string(schema: Mapping[str, Any]) -> bool:
    if "anyOf" in schema:
        return any(_takes_string(option) for option in schema["anyOf"])
    if "enum" in schema:
        return any(isinstance(choice, str) for choice in schema["enum"])
    return schema.get("type") in (None, "string")


def _checked(schema: Mapping[str, Any], value: Any, path: str, values: bool = True) -> Any:
    if "anyOf" in schema:
        refusals: list[tuple[Mapping[str, Any], ValueError]] = []
        for option in schema["anyOf"]:
            try:
                return _checked(option, value, path, values)
            except ValueError as exc:
                refusals.append((option, exc))
        for option, refusal in refusals:  # a list, but of the wrong items: say which item
            if _fits(option.get("type"), value):
                raise refusal
        raise ValueError(f"{path} must be {_expected(schema)}, not {_kind(value)}")
    wanted = schema.get("type")
    if wanted is not None:
        value = _of_type(wanted, value, path, schema)
    if values and "enum" in schema and value not in schema["enum"]:
        listed = ", ".join(repr(choice) for choice in schema["enum"])
        raise ValueError(f"{path} must be one of {listed}, not {value!r}")
    if wanted == "array" and "items" in schema:
        return [_checked(schema["items"], item, f"{path}[{at}]", values) for at, item in enumerate(value)]
    if wanted == "object" and "properties" in schema:
        declared = schema["properties"]
        return {
            key: item if item is None else _checked(declared.get(key, {}), item, f"{path}.{key}", values)
            for key, item in value.items()
        }
    return value


def _fits(wanted: Any, value: Any) -> bool:
    """Whether value is of JSON schema type wanted (any type when none is declared)."""
    if wanted in ("number", "integer"):
        whole = isinstance(value, int) or wanted == "number"
        return isinstance(value, int | float) and not isinstance(value, bool) and whole
    kinds: dict[str, type] = {"string": str, "boolean": bool, "array": list, "object": dict}
    if wanted == "null":
        return value is None
    return wanted not in kinds or isinstance(value, kinds[wanted])


def _of_type(wanted: str, value: Any, path: str, schema: Mapping[str, Any]) -> Any:
    if wanted == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)  # 5.0: the same whole number, as models sometimes write it
    if not _fits(wanted, value):
        raise ValueError(f"{path} must be {_expected(schema)}, not {_kind(value)}")
    if wanted == "number" and not math.isfinite(value):
        raise ValueError(f"{path} must be a finite number")
    return value


def _expected(schema: Mapping[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_expected(option) for option in schema["anyOf"])
    wanted = schema.get("type")
    if wanted == "array" and isinstance(schema.get("items"), Mapping) and "type" in schema["items"]:
        return f"a list of {_plural(schema['items']['type'])}"
    return _KINDS.get(str(wanted), "a value")


def _plural(kind: str) -> str:
    return {"string": "strings", "object": "objects", "integer": "whole numbers"}.get(kind, f"{kind} values")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
