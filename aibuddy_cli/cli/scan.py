"""`aibuddy scan [PATH] [--staged]`: credential-shaped values in a vault's files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..errors import ExitCode
from . import output
from .context import state_of

if TYPE_CHECKING:
    from ..store.files import WalkableStore

app = typer.Typer()


FOUND_EXIT = int(ExitCode.CONFLICT)  # something was found: the vault's files conflict with "no secrets"


@app.command()
def scan(
    ctx: typer.Context,
    path: Path | None = typer.Argument(
        None,
        help="A folder or file to scan (default: the vault). A folder that is not a vault is read whole.",
    ),
    staged: bool = typer.Option(
        False, "--staged", help="Scan what git would commit from the vault (the pre-commit hook's check)."
    ),
    json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Report credential-shaped values (API keys, private keys, passwords, tokens, JWTs) in the
    vault's memory, knowledge, tables, tasks and logs: file, line and kind, never the value.
    With --staged, also the staged files never to be committed (aibuddy's cache; a team vault's
    personal files). Exit 0 when none is found, 4 when some are."""
    from ..redaction import scan as scanning
    from ..vault import locate_vault

    state = state_of(ctx, json)
    personal: Path | None = None
    store: WalkableStore | None = None
    if path is None:
        vault = locate_vault(state.vault_option, state.settings, Path.cwd())
        root = vault.root
        from ..app import team
        from ..app.session import database_store

        if team.is_team_vault(vault) and not staged:  # the user's own files live apart: read them too
            personal = team.personal_vault(vault, state.settings).root
        if not staged:  # a database serves the vault's files: read them there
            store = database_store(vault, state.settings)
    else:
        root = path.expanduser().resolve()
    if staged:
        result = scanning.scan_staged(root)
    elif store is not None:
        result = scanning.scan_store(store, root)
    else:
        result = scanning.scan_folder(root)
    if personal is not None and personal.is_dir():
        result = result.joined(scanning.scan_folder(personal))
    what = "staged vault file(s)" if staged else "file(s)"
    lines = scanning.describe_findings(result.findings)
    summary = (
        f"{len(result.findings)} credential-shaped value(s) in {result.scanned} {what} scanned"
        if result.findings
        else f"no credential-shaped values in {result.scanned} {what} scanned"
    )
    lines += [f"{u.path}: never committed: {u.reason} (git rm --cached it)" for u in result.unshared]
    if result.unshared:
        summary += f"; {len(result.unshared)} staged file(s) must not be committed"
    text = "\n".join([*lines, summary])
    output.render(state.json, result.to_json, lambda: text, lambda: output.emit_text(text))
    if result.findings or result.unshared:
        raise typer.Exit(FOUND_EXIT)
