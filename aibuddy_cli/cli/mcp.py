"""`aibuddy mcp`: the Model Context Protocol server on stdio."""

from __future__ import annotations

from pathlib import Path

import typer

from .context import state_of

app = typer.Typer()


@app.command()
def mcp(
    ctx: typer.Context,
    task: str | None = typer.Option(None, "--task", help="Offer knowledge_ask over this task's documents."),
) -> None:
    """Serve the Model Context Protocol on stdio (for Claude Code, Claude Desktop, Cursor, …)."""
    from ..mcp_server import serve

    state = state_of(ctx)
    serve(state.vault_option, state.user_option, task, state.environ, Path.cwd())
