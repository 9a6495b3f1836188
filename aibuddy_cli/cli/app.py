"""The root Typer app: global options, command groups, and the one place errors become exit codes."""

from __future__ import annotations

import functools
import importlib
import re
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from .. import __version__
from ..errors import EXPECTED, as_aibuddy_error
from ..vault import default_user_name, init_vault
from . import doctor, output, scan
from .context import AppState, state_of

# The groups of the registry's operations, each in its module `aibuddy_cli.cli.<name>` (an `app`),
# with its help. They are imported and built when a command names them, once a process:
# `aibuddy memory save` builds the memory group only (the kb group alone costs a twentieth of a
# second of start-up), and a process that runs many commands (the tests) does not rebuild them.
GROUPS = {
    "memory": "A user's long-term memory records.",
    "kb": "Reviewed knowledge documents, read section by section.",
    "task": "Tasks: a goal and the knowledge documents attached to it.",
    "table": "Knowledge tables: typed rows in git-friendly CSV files.",
}


class RootGroup(TyperGroup):
    """Maps every AibuddyError raised by any command to its message and exit code; builds the
    command groups on first use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _escape_help_markup(self)

    def list_commands(self, ctx: Any) -> list[str]:  # commands, then groups, as Typer orders them
        names = super().list_commands(ctx)
        plain = [name for name in names if not hasattr(self.commands[name], "commands")]
        return [*plain, *GROUPS, *(name for name in names if name not in plain)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return _group(cmd_name) if cmd_name in GROUPS else super().get_command(ctx, cmd_name)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except EXPECTED as error:
            if isinstance(error, BrokenPipeError) and output.stdout_problem(sys.stdout) is not None:
                output.silence_stdout()  # the reader of stdout went away (`| head -1`): stop quietly
                raise typer.Exit(output.BROKEN_PIPE_EXIT) from None
            state = ctx.obj if isinstance(ctx.obj, AppState) else AppState()
            state.report_warnings()  # what the services noticed before it failed
            raise typer.Exit(output.report_error(as_aibuddy_error(error), state.json)) from None
        finally:
            if isinstance(ctx.obj, AppState):
                ctx.obj.report_warnings()  # whatever a command did not report itself: never dropped
                ctx.obj.close()


# What Rich reads as a markup tag in help text: `[knowledge]` in "default [knowledge] page_chars".
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def _escape_help_markup(command: Any) -> None:
    """Help texts are plain text: escape what Rich would read as markup (`[knowledge]`, `[models]`)
    in every command's and parameter's help, so the help shows it as written. Write help strings
    without markup and without escapes."""

    def escape(text: str | None) -> str | None:
        return None if text is None else _MARKUP_TAG.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", text)

    command.help = escape(command.help)
    command.short_help = escape(command.short_help)
    command.epilog = escape(command.epilog)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = escape(param.help)
    for sub in getattr(command, "commands", {}).values():
        _escape_help_markup(sub)


app = typer.Typer(
    cls=RootGroup,
    name="aibuddy",
    help="Long-term memory and reviewed knowledge for AI assistants, in a plain git-versionable folder.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("scan")(scan.scan)
app.command("doctor")(doctor.doctor)


@functools.cache
def _group(name: str) -> Any:
    """The Click group of GROUPS[name], built as `app.add_typer(module.app, name=name)` would."""
    from typer.main import get_group_from_info
    from typer.models import TyperInfo

    module = importlib.import_module(f"{__package__}.{name}")
    group = get_group_from_info(
        TyperInfo(module.app, name=name, help=GROUPS[name], no_args_is_help=True),
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
        suggest_commands=app.suggest_commands,
    )
    _escape_help_markup(group)
    return group


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
    created = init_vault(path, state.user_option or default_user_name(state.environ))
    from ..gitmerge import register_if_in_git

    register_if_in_git(created.root)  # in a git repository already: the merge driver too
    if json:
        output.emit_json(created.to_json())
    else:
        output.emit_text(f"created vault {created.root} (default user {created.config.default_user})")


@app.command()
def mcp(
    ctx: typer.Context,
    task: str | None = typer.Option(None, "--task", help="Offer knowledge_ask over this task's documents."),
) -> None:
    """Serve the Model Context Protocol on stdio (for Claude Code, Claude Desktop, Cursor, …)."""
    from ..mcp_server import serve

    state = state_of(ctx)
    serve(state.vault_option, state.user_option, task, state.environ, Path.cwd())


worker_app = typer.Typer(help="The model worker: litellm kept warm between commands.", no_args_is_help=True)
app.add_typer(worker_app, name="worker")


@worker_app.command("status")
def worker_status(ctx: typer.Context, json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Whether a worker serves this environment's model calls."""
    from .. import worker

    state = state_of(ctx, json)
    found = worker.status(state.environ)
    text = f"running (pid {found.pid}, {found.calls} calls)" if found.running else "not running"
    output.render(state.json, found.to_json, lambda: text, lambda: output.emit_text(text))


@worker_app.command("stop")
def worker_stop(ctx: typer.Context, json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Stop this environment's worker (the next model call runs in-process and starts one)."""
    from .. import worker

    state = state_of(ctx, json)
    found = worker.stop(state.environ)
    text = "stopped" if not found.running else "still running"
    output.render(state.json, found.to_json, lambda: text, lambda: output.emit_text(text))


@worker_app.command("serve", hidden=True)
def worker_serve(
    ctx: typer.Context,
    lock_fd: int | None = typer.Option(None, "--lock-fd", hidden=True, help="The lock its starter took."),
) -> None:
    """Serve model calls until idle (started by the first model call that finds no worker)."""
    from .. import worker

    worker.serve(state_of(ctx).environ, lock_fd)


git_app = typer.Typer(help="A vault shared through git: the merge driver.", no_args_is_help=True)
app.add_typer(git_app, name="git")


@git_app.command("setup")
def git_setup(
    ctx: typer.Context,
    json: bool = typer.Option(False, "--json", help="Print JSON."),
    personal: bool = typer.Option(
        False, "--personal", help="In a team vault: make your personal vault a git repository of its own."
    ),
) -> None:
    """Register the aibuddy merge driver in this vault's git repository (once per clone); in a team
    vault also give it a vault_id, keep personal folders out of git, and report personal files."""
    from .. import gitmerge

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


@git_app.command("merge-file", hidden=True)
def git_merge_file(
    ctx: typer.Context,
    base: Path = typer.Argument(...),
    current: Path = typer.Argument(...),
    other: Path = typer.Argument(...),
    path: str = typer.Argument(..., help="The file's path in the repository (%P)."),
) -> None:
    """The merge driver git runs: merge OTHER into CURRENT over BASE (exit 1 on a conflict)."""
    from .. import gitmerge

    raise typer.Exit(gitmerge.merge_file(base, current, other, path, environ=state_of(ctx).environ))
