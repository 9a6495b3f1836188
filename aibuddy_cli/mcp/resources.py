"""What an MCP client reads and picks besides the tools: resources and prompts (mcp/server.py
serves them).

Resources are read operations of the registry under a URI, their parameters the URI's: the
user's memory manifest, one record, a task's document map, a table's schema. Each reads the
JSON document the CLI prints with `--json`, through the server's session, so it sees what the
server's user sees and nothing else (another user's record is "not found", as in the CLI).

Prompts are what a person picks from a client's menu:
- `resume_task`: a task's working set assembled (goal, plan, recent history, the memories recall
  finds for it, the document map), to go on with it; the task tools keep the conversation.
- `remember_this`: what the person just said, to be saved as one lasting preference with
  `memory_save` (an explicit save, so its provenance is manual).
- `what_do_you_remember`: the memories recall finds for a topic, with their bodies.
They are the three things a person asks of a memory tool by hand: go on where I left off,
keep this, and what do you know about it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import EXPECTED, NotFound, as_aibuddy_error
from ..jsonvalues import to_json
from .stdio import json_text

if TYPE_CHECKING:
    from ..app.session import Session

# The server's sessions: one user in one vault, a new one per read (mcp.server.Server.session).
Sessions = Callable[[], AbstractContextManager["Session"]]


class Resource(NamedTuple):
    uri: str  # "{name}" parts are the operation's arguments of that name
    operation: str  # the registry's name: "memory show"
    title: str
    description: str


RESOURCES = (
    Resource(
        "aibuddy://memory/manifest",
        "memory manifest",
        "Memory manifest",
        "The user's memory records, one line each (type, file, modified date, description): what "
        "recall chooses from.",
    ),
    Resource(
        "aibuddy://memory/{name}",
        "memory show",
        "Memory record",
        "One of the user's memory records: its header and body.",
    ),
    Resource(
        "aibuddy://tasks/{task}/map",
        "kb map",
        "Task document map",
        "The reviewed documents attached to one of the user's tasks: title, scope, summary and "
        "section count of each.",
    ),
    Resource(
        "aibuddy://tables/{table}/schema",
        "table show",
        "Table schema",
        "One of the user's knowledge tables: its description, key, typed columns and row count.",
    ),
)


def add_resources(app: Any, sessions: Sessions) -> None:
    for resource in RESOURCES:
        app.resource(
            resource.uri,
            name=resource.operation.replace(" ", "_"),
            title=resource.title,
            description=resource.description,
            mime_type="application/json",
        )(_reader(sessions, resource))


def _document(sessions: Sessions, operation: str, values: dict[str, Any]) -> str:
    """The JSON text of the operation's result for values (its arguments), run in one of the
    server's sessions."""
    from ..operations.registry import find

    with sessions() as session:
        return json_text(to_json(find(operation)(session, **values)), indent=2)


def _reader(sessions: Sessions, resource: Resource) -> Any:
    """A function of the URI's parameters that reads the resource's document as JSON text."""
    names = [part.split("}")[0] for part in resource.uri.split("{")[1:]]

    def read(**values: str) -> str:
        from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

        try:
            return _document(sessions, resource.operation, values)
        except NotFound as error:
            raise ResourceNotFoundError(error.message) from None
        except EXPECTED as error:
            raise ResourceError(as_aibuddy_error(error).message) from None

    parameters = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names]
    read.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    read.__annotations__ = {**dict.fromkeys(names, str), "return": str}  # what pydantic reads
    read.__name__ = resource.operation.replace(" ", "_")
    return read


def add_prompts(app: Any, sessions: Sessions) -> None:
    @app.prompt(
        name="resume_task",
        title="Resume a task",
        description="Go on with one of your tasks, its working set assembled: goal, plan, recent "
        "history, the memories that bear on it and its documents.",
    )
    def resume_task(task: str) -> str:
        return (
            f"Let's go on with task {task}. Here is its working set from aibuddy (goal, plan, recent "
            "history, relevant memories, attached documents):\n\n"
            f"{_document(sessions, 'task context', {'task': task})}\n\n"
            f"Continue from where it stands. Add each turn of our conversation with task_add_message "
            f"(task {task}) and close it with task_end when we are done."
        )

    @app.prompt(
        name="remember_this",
        title="Remember this",
        description="Save what you just said as a lasting preference or fact about you.",
    )
    def remember_this(text: str) -> str:
        return (
            "Save this as one lasting memory about me with the memory_save tool: a short kebab-case "
            "name, type `feedback` if it says how I want things done (else `user`), a one-line "
            "description, and the body in my words. Recall first (memory_recall) and update the "
            f"record that already says it instead of saving a second one.\n\n{text}"
        )

    @app.prompt(
        name="what_do_you_remember",
        title="What do you remember?",
        description="The memories aibuddy recalls about a topic, to answer from.",
    )
    def what_do_you_remember(topic: str) -> str:
        return (
            f"Here is what aibuddy recalls about {topic!r}:\n\n"
            f"{_document(sessions, 'memory recall', {'query': topic})}\n\n"
            "Tell me what you know about it from these, and say so when they do not cover it."
        )

    del resume_task, remember_this, what_do_you_remember  # registered with the app
