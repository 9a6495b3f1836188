"""`aibuddy mcp`: the Model Context Protocol server on stdio; `aibuddy mcp config CLIENT`: how a
client starts it (mcp/clients.py)."""

from __future__ import annotations

import shlex
import sys
from json import dumps
from pathlib import Path

import typer

from ..errors import UsageError
from . import output
from .context import state_of
from .files import write_after_asking

app = typer.Typer(
    help="Serve the Model Context Protocol on stdio (for Claude Code, Claude Desktop, Cursor, …).",
    invoke_without_command=True,
)


@app.callback()
def mcp(
    ctx: typer.Context,
    task: str | None = typer.Option(
        None, "--task", help="The task knowledge_ask answers from when a call names none."
    ),
    http: str | None = typer.Option(
        None,
        "--http",
        metavar="[HOST:]PORT",
        help="Serve streamable HTTP instead of stdio, on 127.0.0.1 unless HOST says otherwise; every "
        "request needs a bearer token (aibuddy token create), which fixes its user.",
    ),
    allow_host: list[str] = typer.Option(
        [],
        "--allow-host",
        metavar="NAME[:PORT]",
        help="With --http: a Host clients may use besides loopback.",
    ),
    allow_origin: list[str] = typer.Option(
        [], "--allow-origin", metavar="URL", help="With --http: a browser Origin to accept (none by default)."
    ),
) -> None:
    """Serve the Model Context Protocol on stdio (for Claude Code, Claude Desktop, Cursor, …) or,
    with --http, to many clients behind bearer tokens; `aibuddy mcp config CLIENT` prints how a
    client starts it."""
    if ctx.invoked_subcommand is not None:
        ctx.meta["mcp_task"] = task
        return
    state = state_of(ctx)
    if http is None:
        if allow_host or allow_origin:
            raise UsageError("--allow-host and --allow-origin go with --http")
        from ..mcp.server import serve

        serve(state.vault_option, state.user_option, task, state.settings, Path.cwd())
        return
    if state.user_option is not None or task is not None:
        raise UsageError("over --http each request's token fixes its user: drop --user and --task")
    from ..mcp.http import parse_address, serve_http

    serve_http(state.vault_option, state.settings, Path.cwd(), parse_address(http), allow_host, allow_origin)


@app.command("config")
def config(
    ctx: typer.Context,
    client: str = typer.Argument(..., help="claude-code, claude-desktop, cursor or vscode."),
    write: bool = typer.Option(False, "--write", help="Merge the entry into the client's own file."),
    yes: bool = typer.Option(False, "--yes", help="Write without asking."),
    json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """The client's configuration entry for this installation's server (an absolute command path,
    this vault and user); --write merges it into the client's file, showing the change first."""
    from ..mcp.clients import client_config, server_command

    state = state_of(ctx, json)
    session = state.session()
    command = server_command(sys.argv[0], sys.executable)
    found = client_config(
        client, command, session.vault.root, session.user, ctx.meta.get("mcp_task"), state.environ, Path.cwd()
    )
    if not write:
        if json:
            output.emit_json(found.to_json())
        elif client == "claude-code":
            output.emit_text(shlex.join(found.command_line()))
        else:
            output.emit_text(f"# {found.path}\n{dumps(found.snippet(), indent=2, ensure_ascii=False)}")
        return
    current = found.path.read_text(encoding="utf-8") if found.path.exists() else None
    merged = found.merged(current)
    if merged != current:
        write_after_asking(found.path, current, merged, yes)
    if json:
        output.emit_json({**found.to_json(), "written": merged != current})
    else:
        output.emit_text(f"wrote {found.path}" if merged != current else f"{found.path} has it already")
