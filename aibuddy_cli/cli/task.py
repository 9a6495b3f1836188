"""`aibuddy task …`: the task operations (operations/task.py) as commands."""

from __future__ import annotations

import typer

from . import task_output
from .commands import add_commands

app = typer.Typer()  # its help: GROUPS in cli/app.py
add_commands(app, ("task",), task_output.RENDERS)
