"""Model tools derived from operations: the same function, its arguments as a JSON Schema.

A loop's tools act on what the loop holds (a table loop's read-only queries, a knowledge loop's
task), so a tool takes `service`, which finds the operation's service in the loop's context, and
`fixed`, the arguments the context sets and a model never gives (the task of `kb ask`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..jsonvalues import to_json
from ..models.agent import Tool
from .registry import Operation, offered
from .schemas import input_schema

C = TypeVar("C")


def tool_of(
    op: Operation,
    audience: str,
    service: Callable[[C], Any],
    fixed: Callable[[C], Mapping[str, Any]] | None = None,
    after: Callable[[C, Any], None] | None = None,
) -> Tool[C]:
    """op as the tool `audience` knows it by; `after(context, result)` sees each result."""

    def run(context: C, arguments: dict[str, Any]) -> Any:
        values = op.from_tool(arguments)
        if fixed is not None:
            values.update(fixed(context))
        result = op.function(service(context), **values)
        if after is not None:
            after(context, result)
        return to_json(result)

    return Tool(op.tools[audience], op.description, input_schema(op), run)


def tools_for(
    audience: str, service: Callable[[C], Any], fixed: Callable[[C], Mapping[str, Any]] | None = None
) -> tuple[Tool[C], ...]:
    """Every operation offered to audience, as tools over one kind of context."""
    return tuple(tool_of(op, audience, service, fixed) for op in offered(audience))
