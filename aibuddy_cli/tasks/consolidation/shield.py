"""The idempotency shield: what the chunk's own tool calls already did (`memory_save`, `add_rows`,
…) is handled and not done again; a record the chunk deleted is not re-created."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...transcripts import aibuddy_tool
from ..service import TaskMessage

CONTACTS = "contacts"  # the personal table of the people the conversations mention
MEMORY_TOOLS = ("memory_save", "memory_update")
# The row tools by each name aibuddy gives them, as the design's tool names: the table loops'
# (`add_rows`) and the MCP server's (`table_add_rows`; Claude Code's transcript names it
# `mcp__aibuddy__table_add_rows`, which aibuddy_tool reads). A test checks them against the registry.
ROW_TOOLS = {
    "add_rows": "add_rows",
    "table_add_rows": "add_rows",
    "update_rows": "update_rows",
    "table_update_rows": "update_rows",
}


class Shield:
    """What the chunk's own tool calls already did, so the pass does not do it again."""

    def __init__(self, chunk: Iterable[TaskMessage]) -> None:
        self.memory_written: set[str] = set()
        self.memory_deleted: set[str] = set()
        self.rows: list[tuple[str, dict[str, Any]]] = []
        for message in chunk:
            for call in message.tool_calls or []:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    continue
                name, args = function.get("name"), _arguments(function.get("arguments"))
                if not isinstance(name, str):
                    continue
                name = aibuddy_tool(name)  # mcp__aibuddy__memory_save
                target = args.get("name")
                if name in MEMORY_TOOLS and isinstance(target, str):
                    self.memory_written.add(target)
                elif name == "memory_delete" and isinstance(target, str):
                    self.memory_deleted.add(target)
                elif name in ROW_TOOLS and isinstance(args.get("table"), str):
                    table = args["table"]
                    rows = args.get("rows") if ROW_TOOLS[name] == "add_rows" else [args.get("values")]
                    for row in rows if isinstance(rows, list) else []:
                        if isinstance(row, dict):
                            self.rows.append((table, row))

    def handles(self, category: str, item: Mapping[str, Any]) -> bool:
        """Whether the category will report the item handled (or, for a deleted record, refused)
        because of what the chunk's tool calls did."""
        name, rows = item.get("name"), item.get("rows")
        if category == "memory":
            return isinstance(name, str) and name in self.memory_written | self.memory_deleted
        if category == "contacts":
            return isinstance(name, str) and self.rows_named(CONTACTS, " ".join(name.split()))
        table = item.get("table")
        if category == "knowledge" and isinstance(table, str) and isinstance(rows, list):
            return bool(rows) and all(isinstance(r, dict) and self.row_written(table, r) for r in rows)
        return False

    def rows_named(self, table: str, name: str) -> bool:
        return any(t == table and row.get("name") == name for t, row in self.rows)

    def row_written(self, table: str, row: Mapping[str, Any]) -> bool:
        return any(
            t == table and all(row.get(k) == v for k, v in done.items()) and done for t, done in self.rows
        )


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}
