"""`aibuddy task …`: the task operations (operations/task.py) as commands."""

from __future__ import annotations

import typer

from . import task_output
from .commands import add_commands

app = typer.Typer(help="Tasks: a goal and the knowledge documents attached to it.", no_args_is_help=True)
add_commands(app, ("task",), task_output.RENDERS)
