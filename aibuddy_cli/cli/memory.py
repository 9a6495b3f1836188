"""`aibuddy memory …`: the memory operations (operations/memory.py) as commands."""

from __future__ import annotations

import typer

from . import memory_output
from .commands import add_commands

app = typer.Typer()  # its help: GROUPS in cli/app.py
add_commands(app, ("memory",), memory_output.RENDERS)
