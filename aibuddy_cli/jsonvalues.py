"""JSON values: read strictly from what people, files and models hand in, and written from results.

Reading (RFC 8259): Python's `json` also reads `NaN`, `Infinity` and numbers too large for a
float (`1e400` becomes infinity), and later writes them back as `NaN`, which no other JSON reader
accepts. `loads` refuses them, and a repeated key (which would silently lose a value), with a
ValueError that says why. Writing: `to_json` derives a result's JSON from its declaration.
"""

from __future__ import annotations

import json
import math
from typing import Any

NOT_A_NUMBER = "NaN and Infinity are not JSON numbers"


def loads(text: str | bytes) -> Any:
    """text as strict JSON; ValueError (json.JSONDecodeError is one) naming what is wrong."""
    return json.loads(text, parse_constant=_constant, parse_float=_float, object_pairs_hook=unique_keys)


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large for a number")
    return number


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different: a repeated one would silently lose a value."""
    found = dict(pairs)
    if len(found) != len(pairs):
        repeated = sorted({k for k, _ in pairs if sum(1 for other, _ in pairs if other == k) > 1})
        raise ValueError(f"a key is repeated ({', '.join(repeated)})")
    return found



_SCALARS = (str, int, float, bool, type(None))


def to_json(result: Any) -> Any:
    """A result as the JSON values every front end prints. A result is declared once, as a
    NamedTuple whose fields are its keys in order: its JSON is derived here (each field's value
    in turn), and so is its schema (`operations/schemas.py`). Only a result that reshapes (a key
    that is no field, a field kept out) writes its own `to_json`, which is called instead."""
    if isinstance(result, _SCALARS):
        return result
    if hasattr(result, "to_json"):
        return result.to_json()
    if isinstance(result, tuple) and hasattr(result, "_fields"):
        return {name: to_json(value) for name, value in zip(result._fields, result, strict=True)}
    if isinstance(result, dict):
        if all(isinstance(value, _SCALARS) for value in result.values()):
            return result  # a row, a count by name: nothing inside to convert
        return {key: to_json(value) for key, value in result.items()}
    if isinstance(result, list | tuple):
        return [to_json(value) for value in result]
    return result
