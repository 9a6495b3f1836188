"""`aibuddy token …`: the token operations (operations/token.py) as commands."""

from __future__ import annotations

import typer

from . import token_output
from .commands import add_commands

app = typer.Typer(help="Bearer tokens for `aibuddy mcp --http`: each fixes one user.", no_args_is_help=True)
add_commands(app, ("token",), token_output.RENDERS)
