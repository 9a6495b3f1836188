"""`aibuddy doctor`: whether the vault is ready to work (app/doctor.py), where a team vault keeps each
person's files and moving them out of the shared folder; and what `aibuddy git setup` adds in a
team vault."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..config import CONFIG_FILE
from ..errors import Aborted, ExitCode, UsageError
from ..jsonvalues import to_json
from . import output
from .context import AppState, state_of, stdin_is_terminal

if TYPE_CHECKING:
    from ..app.session import Session


app = typer.Typer()


def session_reporting_itself(state: AppState) -> Session:
    """The run's session, for a command that reports (or fixes) an unfinished set-up itself (`git
    setup`, `doctor`): the notices every other command gives about it (an unfinished team vault,
    a clone whose git lacks the merge driver) are left out."""
    if state._session is None:
        from ..app import merge_driver as gitmerge
        from ..app import team
        from ..app.session import Session

        state._session = Session.locate(state.vault_option, state.user_option, warnings=state.warnings)
        said_itself = [w for w in state.warnings if w.startswith(team.NOTICE) or w == gitmerge.HINT]
        state.warnings[:] = [w for w in state.warnings if w not in said_itself]
        state.report_warnings()
    return state._session


@app.command()
def doctor(
    ctx: typer.Context,
    move: bool = typer.Option(
        False, "--move", help="Move your personal files out of the shared folder into your personal vault."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="With --move: list what would move, move nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask; required when stdin is not a terminal."),
    json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Whether this vault is ready to work: the vault and user found, the configuration, the store,
    git's merge driver, each model role, the worker, the indexes and the records, one line each
    (exit 4 when one fails); in a team vault, where your personal files live."""
    from ..app import doctor as health
    from ..app import team

    state = state_of(ctx, json)
    session = session_reporting_itself(state)
    if move and not dry_run and team.is_team_vault(session.vault):
        pending = team.personal_files(session.vault.root, session.user)
        unused = team.unused_folders(session.vault, session.settings)
        elsewhere = [key for folder in unused for key in folder.files]
        if (pending or elsewhere) and not yes:
            if not stdin_is_terminal():
                raise UsageError("refusing to move files without --yes when stdin is not a terminal")
            where = team.personal_vault(session.vault, session.settings).root
            question = f"Move {len(pending) + len(elsewhere)} personal file(s) to {where}?"
            if pending:
                question += " Those in the shared folder leave it and git's index, not its history."
            if not typer.confirm(question, default=False, err=True):  # stdout may be JSON
                raise Aborted("nothing moved")
    report = team.doctor(session.vault, session.user, session.settings, move=move, dry_run=dry_run)
    found = health.checks(session, _vault_from(state), _user_from(state, session))
    healthy = all(check.ok for check in found)
    text = "\n".join([*(check.line() for check in found), *report.lines()])
    document = {**to_json(report), "checks": [to_json(check) for check in found], "ok": healthy}
    output.render(state.json, lambda: document, lambda: text, lambda: output.emit_text(text))
    if not healthy:
        raise typer.Exit(ExitCode.CONFLICT)


def _vault_from(state: AppState) -> str:
    if state.vault_option is not None:
        return "from --vault"
    if state.settings.vault:
        return "from AIBUDDY_VAULT"
    return f"the nearest {CONFIG_FILE} above {Path.cwd()}"


def _user_from(state: AppState, session: Session) -> str:
    if state.user_option is not None:
        return "from --user"
    if state.settings.user:
        return "from AIBUDDY_USER"
    return f"default_user in {CONFIG_FILE}"


def team_setup(state: AppState) -> tuple[dict[str, Any], list[str]]:
    """What `aibuddy git setup` adds in a team vault: its JSON key and its lines (none outside one)."""
    from ..app import team

    session = session_reporting_itself(state)
    done = team.secure_shared_vault(session.vault, session.user, session.settings, session.adopted)
    if done is None:
        return {}, []
    return {"team": done.to_json()}, done.lines(session.user)


def personal_setup(state: AppState) -> tuple[dict[str, Any], str]:
    """`aibuddy git setup --personal`: the personal vault made a git repository of its own."""
    from ..app import team

    session = state.session()
    if not team.is_team_vault(session.vault):
        raise UsageError(
            "--personal is for a team vault ([teams.*] in aibuddy.toml); "
            "this one keeps everything in its one folder"
        )
    root = team.personal_vault(session.vault, session.settings).root
    repository = team.setup_personal_repository(root)
    text = (
        f"personal vault {repository} is a git repository; push it to a private remote of yours: "
        f"git -C {repository} remote add origin URL && git -C {repository} push -u origin HEAD"
    )
    return {"repository": repository, "personal": True}, text
