"""`aibuddy mcp`: the Model Context Protocol server on stdio (the official `mcp` SDK).

Tools, the agent-facing names of DESIGN.md: `memory_save`, `memory_update`, `memory_delete`,
`memory_recall` (no tool clears memory), `knowledge_ask` (only when the server's task has
attached, usable documents: the main agent never gets the low-level document tools), and
`table_ask` / `table_update`. Each returns the `to_json()` of the same result type the CLI prints
with `--json`. The vault, the user and the task are fixed when the server starts (its options or
environment): no tool argument can name another user or task.

Each call opens its own Session (services and SQLite handles are per thread), so concurrent calls
share nothing mutable but the vault's locks. Whatever a call raises is a tool error (`isError`),
never an exception the SDK would answer with "Error executing tool" and a traceback: its text is
the CLI's error document (`{"error": {"code", "message"}}`), the message in the tools' terms
(`errors.tool_words`: "use the memory_update tool", not a command line); the next call works.
A line that is no readable message is answered too (mcp_stdio). The process stays up, so litellm
is imported once (warmed in the background at start when a model is configured): later model
calls cost the model's own time.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import AibuddyError, as_aibuddy_error, describe_failure, tool_words
from .session import Session

INSTRUCTIONS = """aibuddy keeps the user's long-term memory and knowledge. Call memory_recall before
work that may depend on the user's preferences or past decisions; save what the user asks you to
remember with memory_save (one fact per record). knowledge_ask answers from the task's reviewed
documents with citations. table_ask answers from the user's knowledge tables; table_update changes
them to a described end state."""


class Server:
    """One user in one vault (and perhaps one task), as MCP tools."""

    def __init__(
        self, vault: str | None, user: str | None, task: str | None, environ: Mapping[str, str], cwd: Path
    ) -> None:
        self.vault, self.user, self.task, self.environ, self.cwd = vault, user, task, environ, cwd
        with self.session() as session:  # fail at start, not at the first call, on a bad vault/user
            self.user = session.user
            self.root = session.vault.root
            self.vault = str(self.root)
            if task is not None:
                session.tasks.get(task)
            self.knowledge = task is not None and bool(session.knowledge.map(task)[0])

    @contextmanager
    def session(self) -> Iterator[Session]:
        warnings: list[str] = []
        session = Session.locate(self.vault, self.user, environ=self.environ, cwd=self.cwd, warnings=warnings)
        try:
            yield session
        finally:
            session.close()
            for warning in warnings:  # stdout is the protocol's: warnings go to the server's log
                print(f"warning: {warning}", file=sys.stderr, flush=True)

    def call(self, tool: str, operation: Callable[[Session], Any]) -> Any:
        """A CallToolResult: operation's result as the CLI's JSON, or whatever it raised as a tool
        error (see the module's docstring); nothing escapes."""
        from mcp_types import CallToolResult, TextContent

        try:
            with self.session() as session:
                text, failed = _json_text(operation(session).to_json(), indent=2), False
        except (AibuddyError, OSError, UnicodeError) as error:
            failure = as_aibuddy_error(error)
            worded = " ".join(failure.worded(tool_words(self.tool_names)).split())
            text, failed = _json_text({"error": {**failure.to_json(), "message": worded}}), True
        except Exception as error:  # noqa: BLE001 - a bug: the caller still gets an answer it can read
            failure = AibuddyError(f"{tool} failed unexpectedly: {describe_failure(error)}")
            print(f"error: {' '.join(failure.message.split())}", file=sys.stderr, flush=True)
            text, failed = _json_text({"error": failure.to_json()}), True
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=failed)

    # --- the tools ---------------------------------------------------------------------------

    def memory_save(self, name: str, type: str, description: str, body: str = "") -> Any:
        """Save a new long-term memory record for the user (one fact per record). type: user,
        feedback, project or reference. name: lowercase-file-stem. Fails if the name exists."""
        from .memory.service import RecordWrite
        from .vault import memory_key

        def save(session: Session) -> RecordWrite:
            record = session.memory.save(name, type=type, description=description, body=body)
            return RecordWrite(memory_key(session.user, record.name), record, True)

        return self.call("memory_save", save)

    def memory_update(
        self, name: str, type: str | None = None, description: str | None = None, body: str | None = None
    ) -> Any:
        """Change a memory record's type, one-line description or body (what is left out stays)."""
        from .memory.service import RecordWrite
        from .vault import memory_key

        def update(session: Session) -> RecordWrite:
            result = session.memory.update(name, type=type, description=description, body=body)
            return RecordWrite(memory_key(session.user, name), result.record, result.changed)

        return self.call("memory_update", update)

    def memory_delete(self, name: str) -> Any:
        """Delete one memory record of the user."""
        from .memory.service import RecordDeleted
        from .vault import memory_key

        def delete(session: Session) -> RecordDeleted:
            session.memory.delete(name)
            return RecordDeleted(memory_key(session.user, name))

        return self.call("memory_delete", delete)

    def memory_recall(self, query: str, limit: int | None = None) -> Any:
        """The user's memory records relevant to query (at most 5 bodies): call it before work
        that may depend on the user's preferences, feedback or project background."""
        return self.call("memory_recall", lambda session: session.memory.recall(query, limit))

    def knowledge_ask(self, question: str) -> Any:
        """Answer a question from the task's attached, reviewed documents, with section
        citations (doc#anchor) and the gaps the documents leave."""
        from .knowledge.ask import KnowledgeAgent

        task = self.task or ""  # offered only with a task
        return self.call(
            "knowledge_ask", lambda session: KnowledgeAgent(session.knowledge, task).ask(question)
        )

    def table_ask(self, question: str) -> Any:
        """Answer a question from the user's knowledge tables (read-only)."""
        from .tables.loops import TableAgent

        return self.call(
            "table_ask", lambda session: TableAgent(session.tables, session.environ).ask(question)
        )

    def table_update(
        self, request: str, dry_run: bool = False, instructions: str | None = None
    ) -> Any:
        """Bring the user's knowledge tables to the end state the request describes (not steps);
        dry_run lists the operations without applying them."""
        from .tables.loops import TableAgent

        return self.call(
            "table_update",
            lambda session: TableAgent(session.tables, session.environ).change(
                "update", request, dry_run=dry_run, instructions=instructions
            )
        )

    @property
    def tool_names(self) -> list[str]:
        return [tool.__name__ for tool in self.tools()]

    def tools(self) -> list[Callable[..., Any]]:
        """The tools this server offers (each returns a CallToolResult: see call)."""
        tools: list[Callable[..., Any]] = [
            self.memory_save,
            self.memory_update,
            self.memory_delete,
            self.memory_recall,
        ]
        if self.knowledge:
            tools.append(self.knowledge_ask)
        return [*tools, self.table_ask, self.table_update]


def _json_text(document: Any, indent: int | None = None) -> str:
    """document as JSON text for the wire, which is UTF-8: a string that UTF-8 cannot hold (a lone
    surrogate, as a file name's undecodable bytes become) is sent as its \\u escape."""
    text = json.dumps(document, ensure_ascii=False, indent=indent, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(document, indent=indent, default=str)
    return text


def warm_models(environ: Mapping[str, str], models: Mapping[str, Any]) -> None:
    """Import litellm in the background when any role has a model, so the first call is warm."""
    from .config import ROLES
    from .models import model_settings

    if not any(model_settings(role, models, environ).configured for role in ROLES):
        return

    def warm() -> None:
        from .models import DEFAULT_IMPORT_TIMEOUT, import_litellm

        try:
            import_litellm(DEFAULT_IMPORT_TIMEOUT)  # on its own thread, its output dropped
        except Exception:  # noqa: BLE001 - the first model call imports it again and reports
            pass

    threading.Thread(target=warm, name="aibuddy-warm-litellm", daemon=True).start()


def mcp_app(server: Server) -> Any:
    """The SDK's MCPServer offering server's tools."""
    from mcp.server.mcpserver import MCPServer

    from . import __version__

    app = MCPServer("aibuddy", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for tool in server.tools():
        app.add_tool(tool, name=tool.__name__, structured_output=False)
    return app


def serve(
    vault: str | None, user: str | None, task: str | None, environ: Mapping[str, str], cwd: Path
) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    server = Server(vault, user, task, environ, cwd)
    import anyio

    from .mcp_stdio import serve_stdio
    from .vault import Vault

    app = mcp_app(server)
    warm_models(environ, Vault.open(server.root, environ).config.models)
    anyio.run(serve_stdio, app)
