"""The root Typer app: global options, command groups, and the one place errors become exit codes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from .. import __version__
from ..errors import AibuddyError, as_aibuddy_error
from ..vault import default_user_name, init_vault
from . import kb, memory, output, task
from .context import AppState, state_of


class RootGroup(TyperGroup):
    """Maps every AibuddyError raised by any command to its message and exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (AibuddyError, OSError, UnicodeError) as error:
            state = ctx.obj if isinstance(ctx.obj, AppState) else AppState()
            for warnings in state.warning_lists:  # what a service noticed before it failed
                output.report_warnings(warnings)
            raise typer.Exit(output.report_error(as_aibuddy_error(error), state.json)) from None


app = typer.Typer(
    cls=RootGroup,
    name="aibuddy",
    help="Long-term memory and reviewed knowledge for AI assistants, in a plain git-versionable folder.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(memory.app, name="memory")
app.add_typer(kb.app, name="kb")
app.add_typer(task.app, name="task")


def _version(value: bool) -> None:
    if value:
        output.emit_text(f"aibuddy {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    vault: str | None = typer.Option(
        None, "--vault", help="Vault folder (else AIBUDDY_VAULT, else the nearest aibuddy.toml above)."
    ),
    user: str | None = typer.Option(
        None, "--user", help="Current user (else AIBUDDY_USER, else default_user)."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    ctx.obj = AppState(vault_option=vault, user_option=user)


@app.command()
def init(
    ctx: typer.Context,
    path: Path = typer.Argument(Path("."), help="Folder for the new vault."),
    json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Create a vault: folders, aibuddy.toml and a .gitignore for the derived .aibuddy/ cache."""
    state = state_of(ctx, json)
    created = init_vault(path, state.user_option or default_user_name(os.environ))
    if json:
        output.emit_json({"vault": str(created.root), "default_user": created.config.default_user})
    else:
        output.emit_text(f"created vault {created.root} (default user {created.config.default_user})")
