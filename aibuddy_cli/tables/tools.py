"""The table tools, as DESIGN.md's "Table tools" table names them: read-only ones for every loop,
mutating ones only for `table update` and `table refactor`, and `ask` (the read-only loop in its
own conversation) for those two. Each is a table operation of the registry (operations/table.py:
its `table_read` and `table_write` tools), derived, with the rules of a changing loop added here.

Their arguments are checked against the parameters each declares before they run (agent.py's
ToolBox, tool_arguments.py), so a tool meets only values of the kinds it declares. Each tool runs
over a `TableWork`: the queries (over a read-only store in `table ask`), the
changes (None in `table ask`: no handle to write with exists there), and the run's bookkeeping:
whether the required first `ask` happened, and in a dry run the operations chosen but not applied.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from ..agent import Tool
from ..errors import InvalidInput, NotAllowed
from ..operations.tools import tools_for
from .changes import TableChanges
from .queries import TableQueries


class ToolCallJson(TypedDict):
    """A mutating tool call of a run, as `table update --json` lists it."""

    tool: str
    arguments: dict[str, Any]  # as the model gave them (checked against the tool's schema)
    applied: bool
    result: NotRequired[Any]  # the tool's answer (an operation's JSON), when applied


@dataclass
class TableWork:
    queries: TableQueries
    changes: TableChanges | None = None
    ask: Callable[[str], dict[str, Any]] | None = None  # the read-only loop, for update and refactor
    dry_run: bool = False
    asked: bool = False
    operations: list[ToolCallJson] = field(default_factory=list)  # mutating calls, applied or not
    # Around each operation applied: Ctrl-C waits for it to be applied and journaled (runs.py).
    applying: Callable[[], AbstractContextManager[Any]] = nullcontext


def _queries(work: TableWork) -> TableQueries:
    return work.queries


def _changes(work: TableWork) -> TableChanges | None:
    return work.changes


READ_TOOLS: tuple[Tool[TableWork], ...] = tools_for("table_read", _queries)


def _mutating(tool: Tool[TableWork]) -> Tool[TableWork]:
    """A mutating tool: refused before the required first `ask`, recorded, applied unless dry."""

    def run(work: TableWork, args: dict[str, Any]) -> Any:
        if work.changes is None:
            raise NotAllowed(f"{tool.name} changes tables: not available here")
        if work.ask is not None and not work.asked:
            raise InvalidInput("call ask first: learn what the tables hold before you change them")
        if work.dry_run:
            work.operations.append({"tool": tool.name, "arguments": args, "applied": False})
            return {"dry_run": True, "applied": False, "tool": tool.name}
        with work.applying():
            document = tool.run(work, args)
            work.operations.append(
                {"tool": tool.name, "arguments": args, "applied": True, "result": document}
            )
        return document

    return Tool(tool.name, tool.description, tool.parameters, run)


WRITE_TOOLS: tuple[Tool[TableWork], ...] = tuple(
    _mutating(tool) for tool in tools_for("table_write", _changes)
)
CHANGING = frozenset(tool.name for tool in WRITE_TOOLS)  # the names of the tools that change tables


def ask_tool(work: TableWork, args: dict[str, Any]) -> Any:
    if work.ask is None:
        raise NotAllowed("ask is not available here")
    answer = work.ask(args["question"])
    work.asked = True
    return answer


ASK_TOOL: Tool[TableWork] = Tool(
    "ask",
    "Ask the read-only table assistant a question (in its own conversation); returns its answer.",
    {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    ask_tool,
)
