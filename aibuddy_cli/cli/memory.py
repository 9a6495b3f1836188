"""`aibuddy memory …`: the memory operations (operations/memory.py) as commands."""

from __future__ import annotations

import typer

from . import memory_output
from .commands import add_commands

app = typer.Typer(help="A user's long-term memory records.", no_args_is_help=True)
add_commands(app, ("memory",), memory_output.RENDERS)
