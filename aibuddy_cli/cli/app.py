"""The root Typer app: global options, the commands under it (built on first use), and the one place
errors become exit codes."""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from .. import __version__
from ..errors import EXPECTED, as_aibuddy_error
from ..settings import help_lines
from . import output
from .context import AppState

# Every command and group under the root, in the order help lists them: the module
# `aibuddy_cli.cli.<name>` whose `app` declares it (one command, or a group of them). Each is imported
# and built when a command line names it, once a process: `aibuddy memory save` builds the memory
# group only (importing and building them all costs a tenth of a second of start-up), and a process
# that runs many commands (the tests) does not rebuild sixty of them each time.
COMMANDS = (
    "scan", "doctor", "init", "mcp", "token", "hook", "import", "memory", "kb", "task", "table", "worker",
    "git", "store", "watch", "ui",
)  # fmt: skip
MODULES = {"import": "imports"}  # a command whose name is a Python keyword


class RootGroup(TyperGroup):
    """Maps every AibuddyError raised by any command to its message and exit code; builds the
    command groups on first use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_help(self)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return _command(cmd_name) if cmd_name in COMMANDS else None

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


def _plain_help(command: Any) -> None:
    """Help texts are plain text: escape what Rich would read as markup (`[knowledge]`, `[models]`)
    in every command's and parameter's help, so the help shows it as written, and give a group's
    list each command's first paragraph as one line (Rich keeps a docstring's line breaks there).
    Write help strings without markup and without escapes."""

    def escape(text: str | None) -> str | None:
        return None if text is None else _MARKUP_TAG.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", text)

    if command.short_help is None and command.help:
        command.short_help = " ".join(inspect.cleandoc(command.help).split("\n\n", 1)[0].split())
    command.help = escape(command.help)
    command.short_help = escape(command.short_help)
    command.epilog = escape(command.epilog)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = escape(param.help)
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


# The environment variables aibuddy reads (settings.VARIABLES), shown under the root's help.
ENVIRONMENT = "\n".join(
    ("Environment:", *help_lines(), "and litellm's provider variables: OPENAI_API_KEY, OPENAI_API_BASE, ...")
)

app = typer.Typer(
    cls=RootGroup,
    name="aibuddy",
    help="Long-term memory and reviewed knowledge for AI assistants, in a plain git-versionable folder.",
    epilog=ENVIRONMENT,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's contexts inherit it
)


@functools.cache
def _command(name: str) -> Any:
    """The Click command or group of COMMANDS' `name`, as `app.command` or `app.add_typer` would
    have built it."""
    from typer.main import get_command_from_info, get_group_from_info
    from typer.models import TyperInfo

    declared = importlib.import_module(f"{__package__}.{MODULES.get(name, name)}").app
    built: Any
    if declared.registered_callback or declared.registered_groups or len(declared.registered_commands) > 1:
        built = get_group_from_info(
            TyperInfo(declared, name=name),
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode,
            suggest_commands=app.suggest_commands,
        )
    else:
        built = get_command_from_info(
            declared.registered_commands[0],
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode,
        )
    _plain_help(built)
    return built


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
