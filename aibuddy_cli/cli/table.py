"""`aibuddy table …`: the table operations (operations/table.py) as commands."""

from __future__ import annotations

import typer

from . import table_output
from .commands import add_commands

app = typer.Typer(help="Knowledge tables: typed rows in git-friendly CSV files.", no_args_is_help=True)
columns_app = typer.Typer(
    help="Add, derive, delete, rename, copy, move, transform columns.", no_args_is_help=True
)
add_commands(app, ("table",), table_output.RENDERS)
app.add_typer(columns_app, name="column")
add_commands(columns_app, ("table", "column"), table_output.RENDERS)
