"""`aibuddy git setup`: a vault shared through git; the merge driver git runs."""

from __future__ import annotations

from pathlib import Path

import typer

from . import doctor, output
from .context import state_of

app = typer.Typer(help="A vault shared through git: the merge driver.", no_args_is_help=True)


@app.command("setup")
def setup(
    ctx: typer.Context,
    json: bool = typer.Option(False, "--json", help="Print JSON."),
    personal: bool = typer.Option(
        False, "--personal", help="In a team vault: make your personal vault a git repository of its own."
    ),
) -> None:
    """Register the aibuddy merge driver in this vault's git repository (once per clone); in a team
    vault also give it a vault_id, keep personal folders out of git, and report personal files."""
    from ..app import merge_driver as gitmerge

    state = state_of(ctx, json)
    if personal:
        document, text = doctor.personal_setup(state)
        output.render(state.json, lambda: document, lambda: text, lambda: output.emit_text(text))
        return
    done = gitmerge.setup(doctor.session_reporting_itself(state).vault.root)
    team, said = doctor.team_setup(state)  # nothing outside a team vault
    lines = [f"merge driver registered in {done.repository}"]
    hook = done.pre_commit or {}
    if hook.get("installed"):
        lines.append(
            f"pre-commit secrets check installed: {hook['path']} (git commit --no-verify bypasses it)"
        )
    elif hook.get("reason"):
        state.warnings.append(f"pre-commit secrets check not installed: {hook['reason']}")
    text = "\n".join([*lines, *said])
    document = {**done.to_json(), **team}
    output.render(state.json, lambda: document, lambda: text, lambda: output.emit_text(text))


@app.command("merge-file", hidden=True)
def merge_file(
    ctx: typer.Context,
    base: Path = typer.Argument(...),
    current: Path = typer.Argument(...),
    other: Path = typer.Argument(...),
    path: str = typer.Argument(..., help="The file's path in the repository (%P)."),
) -> None:
    """The merge driver git runs: merge OTHER into CURRENT over BASE (exit 1 on a conflict)."""
    from ..app import merge_driver as gitmerge

    raise typer.Exit(gitmerge.merge_file(base, current, other, path, environ=state_of(ctx).environ))
