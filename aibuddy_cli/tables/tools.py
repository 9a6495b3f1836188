"""The table tools, as DESIGN.md's "Table tools" table names them: read-only ones for every loop,
mutating ones only for `table update` and `table refactor`, and `ask` (the read-only loop in its
own conversation) for those two. The MCP server offers the same Tools under the same names.

Their arguments are checked against the parameters each declares before they run (agent.py's
ToolBox, tool_arguments.py), so a tool meets only values of the kinds it declares. Each tool runs
over a `TableWork`: the queries (over a read-only store in `table ask`), the
changes (None in `table ask`: no handle to write with exists there), and the run's bookkeeping:
whether the required first `ask` happened, and in a dry run the operations chosen but not applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..agent import Tool
from ..errors import InvalidInput, NotAllowed
from .changes import TableChanges
from .queries import METRICS, TableQueries
from .schema import ColumnSpec
from .state import TableList


@dataclass
class TableWork:
    queries: TableQueries
    changes: TableChanges | None = None
    ask: Callable[[str], dict[str, Any]] | None = None  # the read-only loop, for update and refactor
    dry_run: bool = False
    asked: bool = False
    operations: list[dict[str, Any]] = field(default_factory=list)  # mutating calls, applied or not


def _list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise ValueError(f"{what} must be a name or a list of names")


def _int(value: Any, default: int, what: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be a whole number")
    return value


# --- read-only --------------------------------------------------------------------------------


def tables_overview(work: TableWork, args: dict[str, Any]) -> Any:
    return TableList(work.queries.state.user, work.queries.list_tables()).to_json()["tables"]


def filter_rows(work: TableWork, args: dict[str, Any]) -> Any:
    return work.queries.filter(
        _list(args.get("tables"), "tables"),
        args.get("filter"),
        _list(args.get("columns"), "columns") or None,
        _int(args.get("limit"), 50, "limit"),
        _int(args.get("offset"), 0, "offset"),
    ).to_json()


def search_rows(work: TableWork, args: dict[str, Any]) -> Any:
    query = args.get("query", "")
    references = _list(query, "query") if isinstance(query, list) else str(query)
    return work.queries.search(
        references, _list(args.get("tables"), "tables"), _int(args.get("k"), 10, "k")
    ).to_json()


def reduce_rows(work: TableWork, args: dict[str, Any]) -> Any:
    return work.queries.reduce(
        str(args.get("table", "")),
        str(args.get("metric", "")),
        _list(args.get("keys"), "keys"),
        args.get("filter"),
        _list(args.get("group_by"), "group_by"),
    ).to_json()


def filter_join(work: TableWork, args: dict[str, Any]) -> Any:
    return work.queries.join(
        str(args.get("left", "")),
        str(args.get("right", "")),
        str(args.get("on", "")),
        args.get("filter"),
        _list(args.get("columns"), "columns") or None,
        _int(args.get("limit"), 50, "limit"),
    ).to_json()


def search_join(work: TableWork, args: dict[str, Any]) -> Any:
    return work.queries.search_join(
        str(args.get("left", "")),
        str(args.get("right", "")),
        str(args.get("on", "")),
        str(args.get("query", "")),
        _int(args.get("k"), 10, "k"),
    ).to_json()


_REF = {"type": "string", "description": "NAME, or team/<team>/NAME"}
_EXPR = {
    "type": "string",
    "description": 'Python boolean expression over columns, e.g. age > 30 and "x" in tags',
}
_NAMES = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


READ_TOOLS: tuple[Tool[TableWork], ...] = (
    Tool(
        "tables_overview",
        "Every table you may use: reference, description, key, columns with types, row count.",
        _object({}),
        tables_overview,
    ),
    Tool(
        "filter",
        "Rows where a filter holds (all rows without one), by key; columns to pick; at most 1000.",
        _object(
            {
                "tables": _NAMES,
                "filter": _EXPR,
                "columns": _NAMES,
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
            }
        ),
        filter_rows,
    ),
    Tool(
        "search",
        "Rows ranked by how well they match the query (words, CJK, quoted phrases; by meaning in tables with "
        "a vectorized column: several reference texts as a list rank by their summed similarity).",
        _object({"query": _NAMES, "tables": _NAMES, "k": {"type": "integer", "minimum": 1}}, "query"),
        search_rows,
    ),
    Tool(
        "reduce",
        "A metric (count, sum, mean, median, min, max, var, std, mode) of columns, by group.",
        _object(
            {
                "table": _REF,
                "metric": {"type": "string", "enum": list(METRICS)},
                "keys": _NAMES,
                "filter": _EXPR,
                "group_by": _NAMES,
            },
            "table",
            "metric",
            "keys",
        ),
        reduce_rows,
    ),
    Tool(
        "filter_join",
        "Rows of two tables paired where `on` holds (left.col == right.col), with a filter.",
        _object(
            {
                "left": _REF,
                "right": _REF,
                "on": {"type": "string"},
                "filter": _EXPR,
                "columns": _NAMES,
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
            },
            "left",
            "right",
            "on",
        ),
        filter_join,
    ),
    Tool(
        "search_join",
        "The left table's rows that best match the query, paired with the right table's rows.",
        _object(
            {
                "left": _REF,
                "right": _REF,
                "on": {"type": "string"},
                "query": {"type": "string"},
                "k": {"type": "integer"},
            },
            "left",
            "right",
            "on",
            "query",
        ),
        search_join,
    ),
)


# --- mutating ---------------------------------------------------------------------------------


def _mutating(
    name: str, apply: Callable[[TableChanges, dict[str, Any]], Any]
) -> Callable[[TableWork, dict[str, Any]], Any]:
    """A mutating tool: refused before the required first `ask`, recorded, applied unless dry."""

    def run(work: TableWork, args: dict[str, Any]) -> Any:
        if work.changes is None:
            raise NotAllowed(f"{name} changes tables: not available here")
        if work.ask is not None and not work.asked:
            raise InvalidInput("call ask first: learn what the tables hold before you change them")
        if work.dry_run:
            work.operations.append({"tool": name, "arguments": args, "applied": False})
            return {"dry_run": True, "applied": False, "tool": name}
        result = apply(work.changes, args)
        document = result.to_json() if hasattr(result, "to_json") else [r.to_json() for r in result]
        work.operations.append({"tool": name, "arguments": args, "applied": True, "result": document})
        return document

    return run


def _columns(value: Any) -> list[ColumnSpec]:
    if value is None:
        return []
    if not isinstance(value, dict) or not all(isinstance(t, str) for t in value.values()):
        raise ValueError("columns must be an object of column names and types")
    return [ColumnSpec(name, type_) for name, type_ in value.items()]


def _rows(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
        raise ValueError("rows must be a list of objects")
    return value


def _values(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("values must be an object of column names and values")
    return value


def _s(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text")
    return value


def _opt(args: dict[str, Any], name: str) -> str | None:
    return None if args.get(name) is None else _s(args, name)


MUTATING = {
    "add_rows": lambda c, a: c.add_rows(_s(a, "table"), _rows(a.get("rows"))),
    "update_rows": lambda c, a: c.update_rows(_s(a, "table"), _s(a, "filter"), _values(a.get("values"))),
    "delete_rows": lambda c, a: c.delete_rows(_s(a, "table"), _s(a, "filter")),
    "create_table": lambda c, a: c.create(
        _s(a, "name"),
        str(a.get("description") or ""),
        str(a.get("key") or "row_id"),
        _columns(a.get("columns")),
    ),
    "rename_table": lambda c, a: c.rename(_s(a, "old"), _s(a, "new")),
    "delete_tables": lambda c, a: c.delete(_list(a.get("tables"), "tables")),
    "create_empty_column": lambda c, a: c.add_column(_s(a, "table"), _s(a, "column"), _s(a, "type")),
    "create_derived_column": lambda c, a: c.derive_column(
        _s(a, "table"), _s(a, "column"), _s(a, "expression"), _opt(a, "type"), _opt(a, "lossy")
    ),
    "delete_column": lambda c, a: c.delete_column(_s(a, "table"), _s(a, "column")),
    "rename_column": lambda c, a: c.rename_column(_s(a, "table"), _s(a, "old"), _s(a, "new")),
    "copy_column": lambda c, a: c.copy_column(_s(a, "table"), _s(a, "column"), _s(a, "to_table")),
    "move_column": lambda c, a: c.copy_column(
        _s(a, "table"), _s(a, "column"), _s(a, "to_table"), move=True, lossy=_opt(a, "lossy")
    ),
    "vectorize_column": lambda c, a: c.vectorize_column(_s(a, "table"), _s(a, "column")),
    "transform_column": lambda c, a: c.transform_column(
        _s(a, "table"), _s(a, "column"), _opt(a, "type"), _opt(a, "expression"), _opt(a, "lossy")
    ),
}

_COLUMN = {"table": _REF, "column": {"type": "string"}}
_TEXT = {"type": "string"}
_LOSSY = {
    "type": "string",
    "enum": ["round", "drop"],
    "description": "only when the user accepts losing values: round = nearest value, drop = empty it",
}


def _write(name: str, description: str, properties: dict[str, Any], *required: str) -> Tool[TableWork]:
    return Tool(name, description, _object(properties, *required), _mutating(name, MUTATING[name]))


WRITE_TOOLS: tuple[Tool[TableWork], ...] = (
    _write(
        "add_rows",
        "Add rows (objects of column: value); new columns get inferred types.",
        {"table": _REF, "rows": {"type": "array", "items": {"type": "object"}}},
        "table",
        "rows",
    ),
    _write(
        "update_rows",
        "Set values in the rows where the filter holds.",
        {"table": _REF, "filter": _EXPR, "values": {"type": "object"}},
        "table",
        "filter",
        "values",
    ),
    _write(
        "delete_rows",
        "Delete the rows where the filter holds.",
        {"table": _REF, "filter": _EXPR},
        "table",
        "filter",
    ),
    _write(
        "create_table",
        "Create a table: snake_case name, description, columns {name: type}, key column name.",
        {"name": _TEXT, "description": _TEXT, "columns": {"type": "object"}, "key": _TEXT},
        "name",
    ),
    _write("rename_table", "Rename a table within its folder.", {"old": _REF, "new": _TEXT}, "old", "new"),
    _write("delete_tables", "Delete tables.", {"tables": _NAMES}, "tables"),
    _write(
        "create_empty_column",
        "Add an empty column of a type (str int float bool date datetime time list dict).",
        {**_COLUMN, "type": _TEXT},
        "table",
        "column",
        "type",
    ),
    _write(
        "create_derived_column",
        "Add a column computed by an expression over the others (price * quantity, lower(name)); "
        "type optional. Refused when a value does not fit the type exactly, unless lossy is given.",
        {**_COLUMN, "expression": _TEXT, "type": _TEXT, "lossy": _LOSSY},
        "table",
        "column",
        "expression",
    ),
    _write("delete_column", "Delete a column.", _COLUMN, "table", "column"),
    _write(
        "rename_column",
        "Rename a column.",
        {"table": _REF, "old": _TEXT, "new": _TEXT},
        "table",
        "old",
        "new",
    ),
    _write(
        "copy_column",
        "Copy a column to another table, matching rows by key.",
        {**_COLUMN, "to_table": _REF},
        "table",
        "column",
        "to_table",
    ),
    _write(
        "move_column",
        "Move a column to another table, matching rows by key; refused when a value has no row there, "
        'unless lossy is "drop".',
        {**_COLUMN, "to_table": _REF, "lossy": _LOSSY},
        "table",
        "column",
        "to_table",
    ),
    _write(
        "transform_column",
        "Convert a column to another type and/or recompute it by an expression. Refused as a whole when a "
        "value would not convert exactly (79.5 to int), unless lossy is given (round or drop).",
        {**_COLUMN, "type": _TEXT, "expression": _TEXT, "lossy": _LOSSY},
        "table",
        "column",
    ),
    _write(
        "vectorize_column",
        "Make a text or list column searchable by meaning (embeddings through the embedding model).",
        _COLUMN,
        "table",
        "column",
    ),
)


def ask_tool(work: TableWork, args: dict[str, Any]) -> Any:
    if work.ask is None:
        raise NotAllowed("ask is not available here")
    answer = work.ask(_s(args, "question"))
    work.asked = True
    return answer


ASK_TOOL: Tool[TableWork] = Tool(
    "ask",
    "Ask the read-only table assistant a question (in its own conversation); returns its answer.",
    _object({"question": {"type": "string"}}, "question"),
    ask_tool,
)
