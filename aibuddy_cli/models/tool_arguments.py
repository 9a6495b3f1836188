"""A model's tool arguments checked against the JSON schema the tool declares, before it runs.

A model may send anything: a number where a filter text is due, a list for a table name, an
argument the tool does not have. Each tool declares its arguments once (`Tool.parameters`), and
they are checked against exactly that schema, the one the model was given, by jsonschema (Draft
2020-12, which the MCP SDK's clients validate with too) rather than by a checker of our own that
reads a subset of JSON schema, and may read it otherwise. A refusal is one message the model can
act on: jsonschema's most relevant error (`best_match`) after the path of the argument it is about
(`limit: 'five' is not of type 'integer'`, `rows[0]: 'Evil' is not of type 'object'`).

Beyond the schema: an argument it does not declare is refused with those it does; null is an
argument left out; 5.0 comes back as 5 where an integer is declared; NaN and the infinities are
no number. Numeric bounds are the tools' own (they clamp or refuse in their own words), and so
are an enum's values for a caller that leaves them to the tools (the MCP server: `values=False`).
jsonschema takes ~90 ms to import: the first check imports it, and a schema's validator is built
once (keyed by its JSON text: the MCP server derives a new dict for every call).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any

_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


def check_arguments(
    schema: Mapping[str, Any], arguments: dict[str, Any], *, values: bool = True
) -> dict[str, Any]:
    """arguments, checked against a tool's parameters schema (an object schema): ValueError with
    one message saying what does not fit, and where. Whole numbers sent as 5.0 come back as 5.
    values=False: an enum's values left to the tool (which refuses them in its own words)."""
    from jsonschema.exceptions import best_match

    properties = schema.get("properties") or {}
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        accepted = ", ".join(properties) or "none"
        raise ValueError(f"unknown argument {unknown[0]!r} (the arguments are: {accepted})")
    given = {name: value for name, value in arguments.items() if value is not None}  # null: left out
    error = best_match(_validator(json.dumps(schema, sort_keys=True), values).iter_errors(given))
    if error is not None:
        raise ValueError(_message(error))
    return {name: _whole(properties[name], value) for name, value in arguments.items()}


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


@functools.lru_cache(maxsize=512)
def _validator(schema_text: str, values: bool) -> Any:
    """The compiled validator of a schema (its JSON text), without the keywords left to the tools."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import create

    base = Draft202012Validator
    types, ignored = base.TYPE_CHECKER, _BOUNDS if values else _BOUNDS | {"enum"}

    def finite_number(checker: Any, value: Any) -> bool:  # NaN and the infinities: no JSON number
        not_finite = isinstance(value, float) and not math.isfinite(value)
        return bool(types.is_type(value, "number")) and not not_finite

    kind = create(
        meta_schema=base.META_SCHEMA,
        validators={keyword: check for keyword, check in base.VALIDATORS.items() if keyword not in ignored},
        type_checker=types.redefine("number", finite_number),
        format_checker=base.FORMAT_CHECKER,
    )
    return kind(json.loads(schema_text))


def _message(error: Any) -> str:
    """The error in one line, after the path of the argument it is about (`tables[0]: …`)."""
    import reprlib

    message, options = error.message, error.context or []
    if error.validator == "anyOf" and options and all(o.validator == "type" and not o.path for o in options):
        kinds = " or ".join(repr(option.validator_value) for option in options)
        message = f"{error.instance!r} is not of type {kinds}"  # rather than "not valid under any of …"
    shown = repr(error.instance)
    if len(shown) > 100:  # a long value: its start is enough to tell which one
        message = message.replace(shown, reprlib.repr(error.instance))
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return f"{path.removeprefix('.')}: {message}" if path else message


def _whole(schema: Mapping[str, Any], value: Any) -> Any:
    """A valid value with each whole number sent as 5.0 where schema declares an integer, as 5."""
    wanted = schema.get("type")
    integer = wanted == "integer" or (isinstance(wanted, list) and "integer" in wanted)
    if integer and isinstance(value, float) and value.is_integer():
        return int(value)  # 5.0: the same whole number, as models sometimes write it
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        value = [_whole(schema["items"], item) for item in value]
    elif isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        value = {key: _whole(schema["properties"].get(key, {}), item) for key, item in value.items()}
    for option in schema.get("anyOf", ()):
        value = _whole(option, value)
    return value
