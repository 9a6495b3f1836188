"""`aibuddy mcp`: the Model Context Protocol server on stdio; `aibuddy mcp config CLIENT`: how a
client starts it (mcp_clients.py)."""

from __future__ import annotations

import difflib
import shlex
import sys
from json import dumps
from pathlib import Path

import typer

from ..errors import Aborted, UsageError
from . import output
from .context import state_of, stdin_is_terminal

app = typer.Typer(
    help="Serve the Model Context Protocol on stdio (for Claude Code, Claude Desktop, Cursor, …).",
    invoke_without_command=True,
)


@app.callback()
def mcp(
    ctx: typer.Context,
    task: str | None = typer.Option(None, "--task", help="Offer knowledge_ask over this task's documents."),
) -> None:
    """Serve the Model Context Protocol on stdio (for Claude Code, Claude Desktop, Cursor, …);
    `aibuddy mcp config CLIENT` prints how a client starts it."""
    if ctx.invoked_subcommand is not None:
        ctx.meta["mcp_task"] = task
        return
    from ..mcp_server import serve

    state = state_of(ctx)
    serve(state.vault_option, state.user_option, task, state.environ, Path.cwd())


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
    from ..mcp_clients import client_config, server_command

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
        _write(found.path, current, merged, yes)
    if json:
        output.emit_json({**found.to_json(), "written": merged != current})
    else:
        output.emit_text(f"wrote {found.path}" if merged != current else f"{found.path} has it already")


def _write(path: Path, current: str | None, merged: str, yes: bool) -> None:
    """Write another program's file: the change shown and asked first on a terminal (on stderr:
    stdout may be JSON); without one, --yes is required."""
    from ..storage import atomic_write

    before, after = (current or "").splitlines(keepends=True), merged.splitlines(keepends=True)
    change = "".join(difflib.unified_diff(before, after, str(path), str(path)))
    if not yes:
        if not stdin_is_terminal():
            raise UsageError(f"refusing to write {path} without --yes when stdin is not a terminal")
        typer.echo(change, err=True)
        if not typer.confirm(f"Write {path}?", default=False, err=True):
            raise Aborted(f"{path} was not written")
    atomic_write(path, merged.encode("utf-8"))
