"""A knowledge table's schema and its typed values: what a cell may hold, how it is written in the
CSV, and how a column's type is inferred from the first values it receives.

`<table>.schema.json` holds the description, the key column (an integer aibuddy assigns, never
written by callers), the columns in order with their types and descriptions, and the next key.
A cell's CSV text is canonical, so the same value is always the same bytes: `git diff` shows
only the rows that changed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, NamedTuple, NotRequired, TypedDict

from .. import jsonvalues
from ..errors import InvalidInput
from ..jsonvalues import to_json

COLUMN_TYPES = ("str", "int", "float", "bool", "date", "datetime", "time", "list", "dict")
NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
MAX_COLUMNS = 200
MAX_CELL_CHARS = 100_000
INT_RANGE = (-(2**63), 2**63 - 1)
DEFAULT_KEY = "row_id"
METRICS = ("count", "sum", "mean", "median", "min", "max", "var", "std", "mode")  # of `table reduce`


def check_name(name: str, what: str = "column") -> str:
    """A table or column name: snake_case ASCII, starting with a letter, at most 63 characters."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid {what} name {name!r}: use snake_case (a-z, 0-9, _), starting with a letter"
        )
    return name


def names_list(text: str | None) -> list[str] | None:
    """Column names given as one comma-separated option (`--columns name,city`)."""
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


class ColumnSpecJson(TypedDict):
    name: str
    type: str
    description: str
    vectorized: NotRequired[bool]  # true, or left out


class ColumnSpec(NamedTuple):
    name: str
    type: str
    description: str = ""
    vectorized: bool = False  # table search ranks its text by embeddings (the `embedding` role)

    def to_json(self) -> ColumnSpecJson:
        data: ColumnSpecJson = {"name": self.name, "type": self.type, "description": self.description}
        if self.vectorized:
            data["vectorized"] = True
        return data


class TableSchema(NamedTuple):
    description: str
    key: str  # the integer key column aibuddy assigns
    columns: tuple[ColumnSpec, ...]  # the key column first
    next_key: int

    @classmethod
    def new(
        cls, description: str = "", key: str = DEFAULT_KEY, columns: Iterable[ColumnSpec] = ()
    ) -> TableSchema:
        check_name(key, "key column")
        specs = [ColumnSpec(key, "int", "the row's key, assigned by aibuddy")]
        if has_surrogate(description):
            raise InvalidInput(f"the description: {SURROGATE_REFUSED}")
        for column in columns:
            check_name(column.name)
            if has_surrogate(column.description):
                raise InvalidInput(f"column {column.name}: the description: {SURROGATE_REFUSED}")
            if column.type not in COLUMN_TYPES:
                raise InvalidInput(
                    f"column {column.name}: unknown type {column.type!r} ({', '.join(COLUMN_TYPES)})"
                )
            if any(existing.name == column.name for existing in specs):
                raise InvalidInput(f"column {column.name} is given twice")
            specs.append(column)
        if len(specs) > MAX_COLUMNS:
            raise InvalidInput(f"a table has at most {MAX_COLUMNS} columns")
        return cls(" ".join(description.split()), key, tuple(specs), 1)

    @property
    def names(self) -> list[str]:
        return [column.name for column in self.columns]

    @property
    def types(self) -> dict[str, str]:
        return {column.name: column.type for column in self.columns}

    def column(self, name: str) -> ColumnSpec:
        for column in self.columns:
            if column.name == name:
                return column
        raise InvalidInput(f"no column {name!r} (columns: {', '.join(self.names)})")

    def with_columns(self, columns: Iterable[ColumnSpec]) -> TableSchema:
        return self._replace(columns=tuple(columns))

    def encode(self) -> bytes:
        return (json.dumps(to_json(self), ensure_ascii=False, indent=2) + "\n").encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, source: str) -> TableSchema:
        """The schema file's content, checked (InvalidInput naming source when it is unreadable)."""
        try:
            raw = json.loads(data)
            key = raw["key"]
            columns = tuple(
                ColumnSpec(
                    str(c["name"]),
                    str(c["type"]),
                    str(c.get("description") or ""),
                    c.get("vectorized") is True,
                )
                for c in raw["columns"]
            )
            schema = cls(str(raw.get("description") or ""), key, columns, int(raw["next_key"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{source}: unreadable table schema ({exc})") from None
        names = schema.names
        problems = [
            f"column {name!r}: invalid name"
            for name in names
            if not isinstance(name, str) or not NAME.fullmatch(name)
        ]
        problems += [
            f"column {c.name}: unknown type {c.type!r}" for c in columns if c.type not in COLUMN_TYPES
        ]
        if len(set(names)) != len(names):
            problems.append("a column name is repeated")
        if not columns or columns[0].name != key or columns[0].type != "int":
            problems.append(f"the key column {key!r} must be the first column, of type int")
        if schema.next_key < 1:
            problems.append("next_key must be at least 1")
        if problems:
            raise InvalidInput(f"{source}: unreadable table schema ({'; '.join(problems)})")
        return schema


# --- values ------------------------------------------------------------------------------------


class ValueRefused(ValueError):
    """A value that does not fit its column; the caller names the row and the column."""


_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")
# Half of a UTF-16 pair on its own (JSON's "\\ud800"): no UTF-8 spelling, so no file could hold it.
_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_REFUSED = "a lone surrogate (\\ud800-\\udfff) is not text"


def has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def parse_value(value: Any, type_: str) -> Any:
    """A value given for a column (JSON value, or text from a CSV cell or a command line) as the
    column's Python value; None for a missing or empty value. Raises ValueRefused."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and type_ != "str":
        return _from_text(value.strip(), type_)
    if type_ == "str":
        if not isinstance(value, str):
            raise ValueRefused(f"expected text, got {_kind(value)}")
        if len(value) > MAX_CELL_CHARS:
            raise ValueRefused(f"text longer than {MAX_CELL_CHARS} characters")
        if has_surrogate(value):
            raise ValueRefused(SURROGATE_REFUSED)
        return value
    if type_ == "int":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueRefused(f"expected a whole number, got {_kind(value)}")
        if isinstance(value, float) and not value.is_integer():
            raise ValueRefused(f"expected a whole number, got {value!r}")
        return _in_range(int(value))
    if type_ == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueRefused(f"expected a number, got {_kind(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise ValueRefused("the number is too large for a floating-point value") from None
        if not math.isfinite(number):
            raise ValueRefused("expected a finite number")
        if isinstance(value, int) and int(number) != value:
            raise ValueRefused(f"{value} has no exact floating-point value ({number!r})")
        return number
    if type_ == "bool":
        if not isinstance(value, bool):
            raise ValueRefused(f"expected true or false, got {_kind(value)}")
        return value
    if type_ == "list":
        if not isinstance(value, list):
            raise ValueRefused(f"expected a list, got {_kind(value)}")
        return _bounded_json(value)
    if type_ == "dict":
        if not isinstance(value, dict):
            raise ValueRefused(f"expected an object, got {_kind(value)}")
        return _bounded_json(value)
    raise ValueRefused(f"expected ISO {type_} text, got {_kind(value)}")


def _from_text(text: str, type_: str) -> Any:
    if text == "":
        return None
    try:
        if type_ == "int":
            if not re.fullmatch(r"[+-]?\d{1,19}", text):
                raise ValueError
            return _in_range(int(text))
        if type_ == "float":
            if not _NUMBER.fullmatch(text):  # float() also takes "1_000", "nan", "infinity"
                raise ValueError
            number = float(text)
            if not math.isfinite(number):
                raise ValueError
            return number
        if type_ == "bool":
            lowered = text.lower()
            if lowered in _TRUE or lowered in _FALSE:
                return lowered in _TRUE
            raise ValueError
        # ISO 8601's extended forms only: Python also reads "20240501" and "01" as a date and a time.
        if type_ == "date" and _DATE.fullmatch(text):
            return date.fromisoformat(text).isoformat()
        if type_ == "datetime" and _DATETIME.fullmatch(text):
            return datetime.fromisoformat(text).isoformat()
        if type_ == "time" and _TIME.fullmatch(text):
            return time.fromisoformat(text).isoformat()
        if type_ in ("date", "datetime", "time"):
            raise ValueError
        if type_ in ("list", "dict"):
            return _json_cell(text, type_)
    except ValueRefused:
        raise
    except (ValueError, OverflowError, RecursionError):
        pass
    return _refuse(type_, text)


def _json_cell(text: str, type_: str) -> Any:
    """A list or dict cell's JSON text, strictly: NaN, Infinity or 1e400 are refused by name."""
    try:
        parsed = jsonvalues.loads(text)
    except json.JSONDecodeError:
        return _refuse(type_, text)
    except ValueError as exc:  # JSON's syntax, but a value no JSON reader takes
        raise ValueRefused(f"{exc} (in {_shown(text)!r})") from None
    return parse_value(parsed, type_) if not isinstance(parsed, str) else _refuse(type_, text)


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_TIME_PART = r"\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(_TIME_PART + r"([+-]\d{2}:\d{2}|Z)?")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]" + _TIME_PART + r"([+-]\d{2}:\d{2}|Z)?")

_EXPECTED = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "date": "a date YYYY-MM-DD",
    "datetime": "a date and time YYYY-MM-DDTHH:MM:SS",
    "time": "a time HH:MM[:SS]",
    "list": "a JSON list",
    "dict": "a JSON object",
}


def _shown(text: str) -> str:
    return text if len(text) <= 40 else text[:39] + "…"


def _refuse(type_: str, text: str) -> Any:
    raise ValueRefused(f"expected {_EXPECTED[type_]}, got {_shown(text)!r}")


def _kind(value: Any) -> str:
    return {
        bool: "true/false",
        int: "a number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _in_range(number: int) -> int:
    if not INT_RANGE[0] <= number <= INT_RANGE[1]:
        raise ValueRefused("the number is out of range (64-bit)")
    return number


def _bounded_json(value: Any) -> Any:
    """A list or dict that is JSON (no NaN or Infinity at any depth) and fits a cell."""
    try:
        text = json_text(value)
    except ValueError as exc:  # NaN or an infinity, or a structure that contains itself
        problem = jsonvalues.NOT_A_NUMBER if "JSON compliant" in str(exc) else "not a JSON value"
        raise ValueRefused(problem) from None
    except (TypeError, RecursionError):
        raise ValueRefused("not a JSON value") from None
    if len(text) > MAX_CELL_CHARS:
        raise ValueRefused(f"value longer than {MAX_CELL_CHARS} characters as JSON")
    if has_surrogate(text):
        raise ValueRefused(SURROGATE_REFUSED)
    return value


def json_text(value: Any) -> str:
    """A list or dict cell, canonical: compact, keys in the order given, UTF-8 as is. Never NaN or
    Infinity (ValueError): a cell is JSON any reader can parse."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def as_json(value: Any) -> Any:
    """value as an answer or the journal may show it: an expression's infinity as its text "inf"
    (JSON has no such number; it is never stored)."""
    return repr(value) if isinstance(value, float) and not math.isfinite(value) else value


def cell_text(value: Any, type_: str) -> str:
    """A parsed value as its CSV cell (the one spelling of that value)."""
    if value is None:
        return ""
    if type_ == "bool":
        return "true" if value else "false"
    if type_ == "float":
        return repr(float(value))
    if type_ in ("list", "dict"):
        return json_text(value)
    return str(value)


def infer_type(values: Iterable[Any], *, from_text: bool) -> str:
    """The type of a new column from the values it receives: the narrowest that fits them all.

    JSON values keep their JSON type (text stays text: "01234" is a code, not a number). Text from
    a CSV file is read as what it spells, and only when the guessed type gives the same text back
    (its one spelling of the value): true/false, whole numbers (`12`, not `+12`, `012` or `1_000`),
    numbers (`9.5`, not `1.10` or `1e5`; a whole number such as `12` may join them, it is written
    `12.0`), ISO dates, times and date-times as Python writes them, else text."""
    candidates = list(_TEXT_CANDIDATES if from_text else _JSON_CANDIDATES)
    seen = False
    for value in values:
        if value is None or value == "":
            continue
        seen = True
        candidates = [t for t in candidates if _fits(value, t, from_text)]
    return candidates[0] if seen and candidates else "str"


_TEXT_CANDIDATES = ("bool", "int", "float", "date", "datetime", "time", "str")
_JSON_CANDIDATES = ("bool", "int", "float", "list", "dict", "str")


def _fits(value: Any, type_: str, from_text: bool) -> bool:
    if type_ == "str":
        return isinstance(value, str)
    if from_text and not isinstance(value, str):
        return False
    if not from_text and (isinstance(value, str) or (type_ == "int" and isinstance(value, float))):
        return False
    try:
        parsed = parse_value(value, type_)
    except ValueRefused:
        return False
    if not from_text:
        return True
    return spells(value, parsed, type_)


def spells(text: str, value: Any, type_: str) -> bool:
    """Whether text is the one spelling of value (a whole number also in its int spelling: "12"
    is the number twelve exactly, though a float column writes it 12.0)."""
    if type_ == "float" and isinstance(value, float) and value.is_integer() and text == str(int(value)):
        return True
    return cell_text(value, type_) == text


# --- carrying a value from one type to another --------------------------------------------------

LOSSY_MODES = ("round", "drop")


def convert(value: Any, source: str, target: str, *, nearest: bool = False) -> Any:
    """A value of a `source` column as a value of `target` (None stays None). ValueRefused when
    it has none; `nearest` takes the nearest one (a number rounded to a whole one, halves away
    from zero; text read as what it spells even when its spelling changes) where one exists.
    Whether the conversion is exact is `carry`'s question."""
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):  # an expression's overflow: 1e308 * 10
        raise ValueRefused(f"{value!r} is not a finite number")
    if source == target:
        return value
    if target == "str":
        return cell_text(value, source)
    if source == "str":
        if target == "int" and nearest:
            try:
                return parse_value(value, "int")
            except ValueRefused:
                return _whole(parse_value(value, "float"), nearest=True)
        return parse_value(value, target)
    if target == "int" and source in ("float", "bool"):
        return int(value) if source == "bool" else _whole(value, nearest=nearest)
    if target == "float" and source in ("int", "bool"):
        return float(value)
    if target == "bool" and source in ("int", "float"):
        if value in (0, 1):
            return bool(value)
        raise ValueRefused(f"only 0 and 1 are true or false, not {value!r}")
    if source == "date" and target == "datetime":
        return datetime.fromisoformat(value).isoformat()
    if source == "datetime" and target == "date":
        moment = datetime.fromisoformat(value)
        if moment.time() != time() or moment.tzinfo is not None:
            raise ValueRefused(f"{value} is not midnight: its time of day would be lost")
        return moment.date().isoformat()
    return parse_value(cell_text(value, source), target)


def _whole(number: float, *, nearest: bool) -> int:
    if not math.isfinite(number):
        raise ValueRefused(f"{number!r} is not a finite number")
    if number.is_integer():
        return _in_range(int(number))
    if not nearest:
        raise ValueRefused(f"{number!r} is not a whole number")
    return _in_range(int(Decimal(number).to_integral_value(ROUND_HALF_UP)))


def same_value(a: Any, b: Any, type_: str) -> bool:
    """Whether two values of a column are the same value (True is not 1, 1.0 is not 1)."""
    if a is None or b is None:
        return a is None and b is None
    return cell_text(a, type_) == cell_text(b, type_) and type(a) is type(b)


class Carried(NamedTuple):
    value: Any  # what the cell holds now
    lost: str | None  # why the value was not carried over exactly (None: it was)


def carry(value: Any, source: str, target: str, lossy: str | None = None) -> Carried:
    """A value carried from a `source` column to a `target` one. Exact when converting it back
    gives the same value; else ValueRefused without `lossy`, the nearest value with "round"
    (ValueRefused when there is none), empty with "drop"."""
    try:
        new = convert(value, source, target)
        if source == "str":
            exact = spells(value, new, target)
        else:
            exact = same_value(convert(new, target, source), value, source)
        lost = None if exact else f"it would become {cell_text(new, target)!r}"
    except ValueRefused as exc:
        new, lost = None, str(exc)
    if lost is None:
        return Carried(new, None)
    if lossy == "drop":
        return Carried(None, f"{lost}; emptied")
    if lossy == "round":
        nearest = convert(value, source, target, nearest=True)
        return Carried(nearest, f"{lost}; now {cell_text(nearest, target)!r}")
    raise ValueRefused(lost)


def check_lossy(lossy: str | None) -> str | None:
    if lossy is not None and lossy not in LOSSY_MODES:
        raise InvalidInput(f"unknown lossy conversion {lossy!r}: use {' or '.join(LOSSY_MODES)}")
    return lossy


def parse_row(row: Mapping[str, Any], types: Mapping[str, str], number: int) -> dict[str, Any]:
    """A row's values parsed for their columns; InvalidInput names the row and the column."""
    parsed = {}
    for name, value in row.items():
        try:
            parsed[name] = parse_value(value, types[name])
        except ValueRefused as exc:
            raise InvalidInput(f"row {number}, column {name}: {exc}") from None
    return parsed
