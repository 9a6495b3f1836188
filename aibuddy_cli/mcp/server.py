"""`aibuddy mcp`: the Model Context Protocol server (the official `mcp` SDK), on stdio here and on
streamable HTTP through mcp/http.py.

Tools: the registry's `mcp` operations (operations/*.py), every one a model may use: memory
(`memory_save`, `memory_recall`, …; no tool clears memory), tables with and without a second
model (`table_filter`, `table_add_rows`, …, `table_ask`, `table_update`, `table_refactor`), tasks
(`task_new`, `task_add_message`, `task_end`, …: an agent's own conversation reaches consolidation
and extraction), and `knowledge_ask` (the knowledge subagent over the documents attached to the
task the call names, one of the caller's own; stdio's `--task` is the one a call leaves out: the
main agent never gets the low-level document tools). Their arguments,
descriptions, annotations and output schemas come from the registry; each answers with the
`to_json()` of the same result type the CLI prints with `--json`, as text and as structured
content. The vault and the user are fixed when the server starts (over HTTP the user is each
request's token's): no tool argument can name another user, and a task argument names one of
the caller's own tasks (tasks are per user: another's is "not found", as an unknown one).

Each worker thread keeps its own Session per user (services and SQLite handles are per thread),
so concurrent calls share nothing mutable but the vault's locks, and a call pays no connect; the
FolderWatch tells the memory index what changed since the last call instead of a folder scan.
A call's arguments are checked against the tool's schema before it runs (tool_arguments, not the
SDK's pydantic validation, which takes `true` for the number 1). Whatever a call raises, a
refused argument included, is a tool error (`isError`), never an exception the SDK would answer
with "Error executing tool" and a traceback: its text is
the CLI's error document (`{"error": {"code", "message"}}`), the message in the tools' terms
(`errors.tool_words`: "use the memory_update tool", not a command line); the next call works.
A line that is no readable message is answered too (mcp.stdio). The process stays up, so litellm
is imported once (warmed in the background at start when a model is configured): later model
calls cost the model's own time.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from ..app.session import Session
from ..errors import EXPECTED, AibuddyError, InvalidInput, as_aibuddy_error, describe_failure, tool_words
from ..jsonvalues import to_json
from ..store.locks import WriteBehind
from .stdio import json_text, wire_json

if TYPE_CHECKING:
    from ..operations.registry import Operation
    from ..settings import Settings
    from ..store.folder_watch import FolderWatch

INSTRUCTIONS = """aibuddy keeps the user's long-term memory and knowledge. Call memory_recall before
work that may depend on the user's preferences or past decisions; save what the user asks you to
remember with memory_save (one fact per record). knowledge_ask answers from the reviewed
documents attached to one of the user's tasks, with citations. The table_* tools read and change
the user's knowledge tables directly (table_filter, table_add_rows, ...); table_ask and
table_update do it from a described question or end state. To let aibuddy learn from a
conversation by itself, open it with task_new, add each turn with task_add_message and close it
with task_end."""


# How long a server that is stopping waits for the writes it made after their answers.
WRITE_BEHIND_SECONDS = 30.0


class Server:
    """One vault as MCP tools, for one user (stdio: the server's) or, over HTTP, for the user each
    request's token fixes (and perhaps one task, on stdio)."""

    def __init__(
        self,
        vault: str | None,
        user: str | None,
        task: str | None,
        settings: Settings,
        cwd: Path,
        *,
        http: bool = False,
        watch: FolderWatch | None = None,
    ) -> None:
        """http: every call's user is its bearer token's (mcp/http.py), never the server's;
        watch: see FolderWatch (a recall then reads no folder listing)."""
        self.vault, self.user, self.task, self.settings, self.cwd = vault, user, task, settings, cwd
        self.http, self.watch = http, watch
        self._threads = threading.local()  # each worker thread's sessions, by user
        # Bookkeeping written after the answer (a recall's telemetry), one write at a time.
        self.write_behind = WriteBehind(_report_failure)
        if http:
            from ..errors import UsageError
            from ..vault import locate_vault

            if task is not None:
                raise UsageError(
                    "--task serves one user's task over stdio; over HTTP each token fixes its user"
                )
            self.root = locate_vault(vault, settings, cwd).root
            self.vault = str(self.root)
            return
        with self.session() as session:  # fail at start, not at the first call, on a bad vault/user
            self.user = session.user
            self.root = session.vault.root
            self.vault = str(self.root)
            if task is not None:
                session.tasks.get(task)

    def caller(self) -> str | None:
        """The user this call acts as: the server's, or over HTTP its bearer token's."""
        if not self.http:
            return self.user
        from mcp.server.auth.middleware.auth_context import get_access_token

        from ..errors import NotAllowed

        token = get_access_token()
        if token is None or not token.subject:  # the transport lets no such request through
            raise NotAllowed("this request carries no valid bearer token")
        return token.subject

    @contextmanager
    def session(self) -> Iterator[Session]:
        """The caller's session on this thread: kept from call to call (its SQLite handles stay
        open, so a call pays no connect, and closing never checkpoints the index), and made again
        when aibuddy.toml changes. Warnings go to the server's log (stdout is the protocol's)."""
        user = self.caller()
        sessions: dict[str | None, tuple[Any, Session]] = self._threads.__dict__.setdefault("sessions", {})
        config = self._config_signature()
        kept = sessions.get(user)
        if kept is None or kept[0] != config or config is None:
            if kept is not None:
                sessions.pop(user)
                kept[1].close()
            warnings: list[str] = []
            session = Session.locate(
                self.vault, user, settings=self.settings, cwd=self.cwd, warnings=warnings, watch=self.watch
            )
            session.memory.telemetry_later = self.write_behind.submit
            kept = (config, session)
            sessions[user] = kept
        session = kept[1]
        try:
            yield session
        except BaseException as error:
            if not isinstance(error, AibuddyError):  # a bug's or the disk's: keep none of its state
                sessions.pop(user, None)
                session.close()
            raise
        finally:
            for warning in session.take_warnings():
                print(f"warning: {warning}", file=sys.stderr, flush=True)

    def _config_signature(self) -> tuple[int, int, int, int] | None:
        """What tells that aibuddy.toml changed (None: no vault yet, or it is gone)."""
        from ..config import CONFIG_FILE

        if self.vault is None:
            return None
        try:
            st = os.stat(Path(self.vault) / CONFIG_FILE)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)

    def call(self, tool: str, operation: Callable[[Session], Any]) -> Any:
        """A CallToolResult: operation's result as the CLI's JSON, both as text and as structured
        content (the tool's outputSchema describes it), or whatever it raised as a tool error (see
        the module's docstring); nothing escapes."""
        from mcp_types import CallToolResult, TextContent

        try:
            with self.session() as session:
                document = wire_json(to_json(operation(session)))
        except EXPECTED as error:
            text = json_text(as_aibuddy_error(error).document(tool_words(self.tool_names)))
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        except Exception as error:  # noqa: BLE001 - a bug: the caller still gets an answer it can read
            failure = AibuddyError(f"{tool} failed unexpectedly: {describe_failure(error)}")
            print(f"error: {' '.join(failure.message.split())}", file=sys.stderr, flush=True)
            text = json_text(failure.document())
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        text = json_text(document, indent=2)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=document)

    # --- the tools: the registry's `mcp` operations ----------------------------------------

    def defaults(self, op: Operation) -> dict[str, Any]:
        """The tool arguments of op a call may leave out because the server gives them: its task
        (stdio `--task`), for the knowledge operation (`knowledge_ask`). The task tools name their
        task in every call. Either way a task is one of the caller's own: tasks are per user."""
        if self.task is None or op.words[0] != "kb":
            return {}
        return {a.tool_name: self.task for a in op.arguments if a.name == "task" and a.param.model}

    def operations(self) -> list[Operation]:
        """The operations offered as tools: every `mcp` one."""
        from ..operations.registry import offered

        return offered("mcp")

    def run_tool(self, op: Operation, arguments: Mapping[str, Any]) -> Any:
        """The CallToolResult of op called as a tool with arguments as the client sent them: each
        checked against the tool's schema first (tool_arguments: a bool is no whole number, "5" no
        number, an argument the tool lacks is refused), so a wrong one is a tool error the model
        reads, the CLI's error document like any refusal, and nothing runs."""
        from ..models.tool_arguments import check_arguments, json_text_read
        from ..operations.schemas import input_schema

        schema, given = input_schema(op), dict(arguments)
        for name, value in self.defaults(op).items():
            if given.get(name) is None:
                given[name] = value

        def run(session: Session) -> Any:
            try:  # the values of an enum are the tool's to refuse, in its words
                checked = check_arguments(schema, json_text_read(schema, given), values=False)
            except ValueError as error:
                raise InvalidInput(str(error)) from None
            # from_tool inside the call: a value it cannot convert is a tool error the model reads
            return op(session, **op.from_tool(checked))

        return self.call(op.tools["mcp"], run)

    def tool(self, op: Operation) -> Callable[..., Any]:
        """op as a function the SDK reads: its signature is the tool's arguments, as published;
        calls come to run_tool (mcp_app), not through the SDK's own validation."""

        def run(**arguments: Any) -> Any:
            return self.run_tool(op, {name: value for name, value in arguments.items() if value is not None})

        run.__signature__ = inspect.Signature(_sdk_parameters(op, self.defaults(op)))  # type: ignore[attr-defined]
        run.__name__ = op.tools["mcp"]
        run.__doc__ = op.description
        return run

    @property
    def tool_names(self) -> list[str]:
        return [op.tools["mcp"] for op in self.operations()]

    def tools(self) -> list[Callable[..., Any]]:
        """The tools this server offers (each returns a CallToolResult: see call)."""
        return [self.tool(op) for op in self.operations()]


def _report_failure(error: Exception) -> None:
    """A write made after its answer failed: the server's log says why (the caller has gone)."""
    message = as_aibuddy_error(error).message if isinstance(error, EXPECTED) else describe_failure(error)
    print(f"warning: {' '.join(message.split())}", file=sys.stderr, flush=True)


def _sdk_parameters(op: Operation, defaults: Mapping[str, Any]) -> list[inspect.Parameter]:
    """The tool arguments of op as parameters whose annotations the SDK turns into its schema; one
    in defaults (the server's task) is optional, its default published."""
    from pydantic import Field, WithJsonSchema

    from ..operations.schemas import argument_schema

    parameters = []
    for argument in op.arguments:
        if not argument.param.model:
            continue
        # A value a model shapes differently from the function (`from_tool`: table_create's
        # columns as an object) is checked by its schema here and converted by from_tool.
        declared = Any if argument.param.from_tool is not None else argument.type
        required = argument.required and argument.tool_name not in defaults
        kind = declared if required else declared | None
        schema = WithJsonSchema(argument_schema(argument))
        annotation = Annotated[kind, Field(description=argument.param.help or None), schema]  # type: ignore[valid-type]
        default = inspect.Parameter.empty if required else defaults.get(argument.tool_name)
        parameter = inspect.Parameter(
            argument.tool_name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
        )
        parameters.append(parameter)
    return parameters


def tool_annotations(op: Operation) -> Any:
    """What a client shows and decides by: the title, and whether the tool writes, destroys or
    repeats harmlessly (destructiveHint said outright: the protocol's default is true)."""
    from mcp_types import ToolAnnotations

    return ToolAnnotations(
        title=op.title,
        read_only_hint=op.read_only,
        destructive_hint=op.destructive,
        idempotent_hint=op.idempotent,
        open_world_hint=False,
    )


def warm_up(settings: Settings, config: Any) -> None:
    """What a server's first calls would otherwise wait for, made in the background: litellm
    imported when any role has a model, and the static model's vocabulary read (90 ms, kept: the
    records saved from then on are embedded with it) when recall uses it."""
    warm_models(settings, config.models)
    if config.recall.semantic:

        def read_vocabulary() -> None:
            from ..memory.semantic import SemanticUnavailable, shared

            try:
                shared().vocab()
            except SemanticUnavailable:  # the first recall says so
                pass

        threading.Thread(target=read_vocabulary, name="aibuddy-warm-meaning", daemon=True).start()


def warm_models(settings: Settings, models: Mapping[str, Any]) -> None:
    """Import litellm in the background when any role has a model, so the first call is warm."""
    from ..config import ROLES
    from ..models.calls import model_settings

    if not any(model_settings(role, models, settings).configured for role in ROLES):
        return

    def warm() -> None:
        from ..models.calls import DEFAULT_IMPORT_TIMEOUT, import_litellm

        try:
            import_litellm(DEFAULT_IMPORT_TIMEOUT)  # on its own thread, its output dropped
        except Exception:  # noqa: BLE001 - the first model call imports it again and reports
            pass

    threading.Thread(target=warm, name="aibuddy-warm-litellm", daemon=True).start()


def mcp_app(server: Server, tokens: Any = None, url: str = "http://127.0.0.1") -> Any:
    """The SDK's MCPServer offering server's tools, resources and prompts; tokens (an SDK
    TokenVerifier) and url (where it is served) for HTTP, where every request needs a token.

    A call of one of server's tools goes to Server.run_tool with the arguments as sent: the SDK's
    own validation (pydantic, in lax mode) would take `true` as the number 1, read a string
    argument that looks like JSON as a list, and refuse in its words ("Error executing tool …
    errors.pydantic.dev") instead of the tool error document."""
    import anyio
    from mcp.server.mcpserver import MCPServer

    from .. import __version__
    from ..operations.schemas import output_schema
    from .resources import add_prompts, add_resources

    auth: Any = None
    if tokens is not None:
        from mcp.server.auth.settings import AuthSettings
        from pydantic import AnyHttpUrl

        # No authorization server: tokens come from `aibuddy token create`, so no OAuth routes
        # or protected-resource metadata are published (resource_server_url None).
        auth = AuthSettings(issuer_url=AnyHttpUrl(url), resource_server_url=None)
    ours = {op.tools["mcp"]: op for op in server.operations()}
    # Each tool's result schema, derived from its result type and published as is (the result's
    # document is checked against it by the JSON contract tests, not on every call).
    results = {name: _object_schema(output_schema(op)) for name, op in ours.items()}

    class App(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            op = ours.get(name)
            if op is None:  # a tool this server does not have: the SDK's "Unknown tool" answer
                return await super().call_tool(name, arguments, context)
            return await anyio.to_thread.run_sync(server.run_tool, op, arguments)

        async def list_tools(self) -> Any:
            listed = await super().list_tools()
            return [
                tool.model_copy(update={"output_schema": results[tool.name]}) if tool.name in results
                else tool
                for tool in listed
            ]

    app = App(
        "aibuddy",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        token_verifier=tokens,
        auth=auth,
    )
    for op in ours.values():
        tool = server.tool(op)
        hints = tool_annotations(op)
        app.add_tool(tool, name=tool.__name__, title=op.title, annotations=hints, structured_output=False)
    add_resources(app, server.session)
    add_prompts(app, server.session)
    return app


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """schema with the root type the protocol requires of an outputSchema, "object": a result
    that is one of several documents (`task consolidate`: a pass or a cancellation) is an object
    either way."""
    if schema.get("type") == "object":
        return schema
    assert all(branch.get("type") == "object" for branch in schema["anyOf"]), schema
    return {"type": "object", **schema}


def serve(
    vault: str | None, user: str | None, task: str | None, settings: Settings, cwd: Path
) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    from ..store.folder_watch import FolderWatch

    server = Server(vault, user, task, settings, cwd, watch=FolderWatch())
    import anyio

    from ..vault import Vault
    from .stdio import serve_stdio

    app = mcp_app(server)
    warm_up(settings, Vault.open(server.root, settings.environ).config)
    try:
        anyio.run(serve_stdio, app)
    finally:
        server.write_behind.drain(WRITE_BEHIND_SECONDS)
