"""`aibuddy import …`: the import operations (operations/imports.py) as commands."""

from __future__ import annotations

import typer

from . import import_output
from .commands import add_commands

app = typer.Typer(
    help="Memories another tool kept (Claude Code, mem0, JSONL), into yours.", no_args_is_help=True
)
add_commands(app, ("import",), import_output.RENDERS)
