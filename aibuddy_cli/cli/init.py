"""`aibuddy init [PATH]`: a new vault."""

from __future__ import annotations

from pathlib import Path

import typer

from ..vault import default_user_name, init_vault
from . import output
from .context import state_of

app = typer.Typer()


@app.command()
def init(
    ctx: typer.Context,
    path: Path = typer.Argument(Path("."), help="Folder for the new vault."),
    json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Create a vault: folders, aibuddy.toml and a .gitignore for the derived .aibuddy/ cache."""
    state = state_of(ctx, json)
    user = state.user_option or default_user_name(state.settings.user, state.environ.get("USER"))
    created = init_vault(path, user)
    from ..app.merge_driver import register_if_in_git

    register_if_in_git(created.root)  # in a git repository already: the merge driver too
    if json:
        output.emit_json(created.to_json())
    else:
        output.emit_text(f"created vault {created.root} (default user {created.config.default_user})")
