"""JSON as RFC 8259 defines it, for what people, files and models hand in: Python's `json` also
reads `NaN`, `Infinity` and numbers too large for a float (`1e400` becomes infinity), and later
writes them back as `NaN`, which no other JSON reader accepts. Reading through here refuses
them, and a repeated key (which would silently lose a value), with a ValueError that says why.
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

