"""The table tools, as DESIGN.md's "Table tools" table names them: read-only ones for every loop,
mutating ones only for `table update` and `table refactor`, and `ask` (the read-only loop in its
own conversation) for those two. Each is a table operation of the registry (operations/table.py:
its `table_read` and `table_write` tools), derived, with the rules of a changing loop added here.

Their arguments are checked against the parameters each declares before they run (models/agent.py's
ToolBox, models/tool_arguments.py), so a tool meets only values of the kinds it declares. Each tool runs
over a `TableWork`: the queries (over a read-only store in `table ask`), the
changes (None in `table ask`: no handle to write with exists there), and the run's bookkeeping:
whether the required first `ask` happened, and in a dry run the operations chosen but not applied.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from ...errors import InvalidInput, NotAllowed
from ...models.agent import Tool
from ...tables.changes import TableChanges
from ...tables.queries import TableQueries
from ..tools import tools_for


class ToolCallJson(TypedDict):
    """A mutating tool call of a run, as `table update --json` lists it: applied, chosen in a dry
    run, or refused (with the error the model was given)."""

    tool: str
    arguments: dict[str, Any]  # as the model gave them (refused: redacted and cut, as progress shows them)
    applied: bool
    result: NotRequired[Any]  # the tool's answer (an operation's JSON), when applied
    error: NotRequired[str]  # why it was refused: nothing of it was applied


def target(arguments: dict[str, Any]) -> Any:
    """The table (or tables) a mutating call names, as the model spelled it."""
    for name in ("table", "name", "old"):
        if isinstance(arguments.get(name), str):
            return arguments[name]
    tables = arguments.get("tables")
    return tuple(map(str, tables)) if isinstance(tables, list) else None


def refusal(operation: ToolCallJson) -> str:
    """A refused call in a line: its tool, the table it names, why it was refused."""
    aim = target(operation["arguments"])
    named = ", ".join(aim) if isinstance(aim, tuple) else aim
    return f"{operation['tool']}{' ' + named if named else ''}: {operation.get('error', '')}"


def not_made_good(operations: list[ToolCallJson]) -> list[ToolCallJson]:
    """The refused calls no later call of the same tool on the same table went through for (the
    model retried after creating the table, or with a value that fits): what the run's answer
    may claim though it did not happen. One call that went through makes good one refused
    intent, the one with its arguments if there is one, else the earliest: two batches of rows
    refused and one added again leave the other batch not applied (a refused call repeated as
    it was is one intent)."""
    pending: list[tuple[tuple[str, Any], str, list[int]]] = []  # (aim, arguments, call numbers)
    for number, operation in enumerate(operations):
        aim = (operation["tool"], target(operation["arguments"]))
        said = json.dumps(operation["arguments"], sort_keys=True, default=str)
        if "error" in operation:
            same = next((calls for a, s, calls in pending if (a, s) == (aim, said)), None)
            if same is not None:
                same.append(number)
            else:
                pending.append((aim, said, [number]))
        elif operation["applied"]:
            matches = [at for at, (a, _, _) in enumerate(pending) if a == aim]
            exact = [at for at in matches if pending[at][1] == said]
            if matches:
                del pending[(exact or matches)[0]]
    return [operations[number] for number in sorted(n for _, _, numbers in pending for n in numbers)]


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
