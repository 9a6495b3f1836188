"""Typer commands derived from the registry of operations: one per operation, no second declaration.

Each operation's arguments become Typer arguments and options from their `Param`s; every
command takes `--json`, and one that asks first (`Confirm`) takes `--yes`. The command runs the
operation over the session's service and shows the result through the operation's `Render`
(`cli/*_output.py`). Typed errors reach `RootGroup`, the one place they become exit codes.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

import typer

from ..errors import Aborted, AibuddyError, UsageError
from ..jsonvalues import to_json
from ..operations.registry import Argument, Operation, operations
from . import context, output
from .context import state_of
from .rendering import Render, no_hooks

JSON_HELP = "Print one JSON document on stdout."
YES_HELP = "Do not ask; required when stdin is not a terminal."


def not_an_option(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """An option's value spelled like one of the command's own options (`--where --json`) is that
    option, given where a value was due: a usage error, never a filter or a text named --json."""
    own = {name for p in ctx.command.get_params(ctx) for name in (*p.opts, *p.secondary_opts)}
    for item in value if isinstance(value, list | tuple) else [value]:
        if isinstance(item, str) and item.startswith("-") and item.partition("=")[0] in own:
            raise typer.BadParameter(
                f"{item!r} is one of this command's options, so the value of {param.opts[0]} is missing"
            )
    return value


def _typer_parameter(argument: Argument) -> tuple[Any, Any]:
    """The annotation and the Typer default of one argument on the command line."""
    param = argument.param
    kind = param.cli_type if param.cli_type is not None else argument.type
    default = ... if argument.required else argument.default
    settings: dict[str, Any] = {"help": param.help or None}
    if param.metavar:
        settings["metavar"] = param.metavar
    if param.hidden:
        settings["hidden"] = True
    if param.minimum is not None:
        settings["min"] = param.minimum
    if param.maximum is not None:
        settings["max"] = param.maximum
    if param.checked:
        settings["callback"] = not_an_option
    if argument.positional:
        return kind, typer.Argument(default, **settings)
    if param.file:  # the value may come from a file instead: neither is required on its own
        default, kind = None, kind | None
    return kind, typer.Option(default, *param.flags, **settings)


def _file_parameter(argument: Argument) -> tuple[str, Any, Any]:
    param = argument.param
    callback = not_an_option if param.checked else None
    option = typer.Option(None, *param.file, help=param.file_help, callback=callback)
    return f"{argument.name}_file", str | None, option


def confirm_first(op: Operation, service: Any, values: Mapping[str, Any], yes: bool) -> None:
    """Ask on a terminal (on stderr: stdout may be JSON); without one, --yes is required."""
    if op.confirm is None or yes:
        return
    question = op.confirm.question(service, values)
    if question is None:
        return
    if not context.stdin_is_terminal():
        raise UsageError(f"refusing to {op.confirm.verb} without --yes when stdin is not a terminal")
    if not typer.confirm(question, default=False, err=True):
        raise Aborted(f"nothing {op.confirm.done}")


def show(state: context.AppState, render: Render[Any], result: Any, service: Any) -> None:
    """The result on stdout as JSON, Rich or plain text; what it has to say on stderr first. An
    operation that has nothing to show (a background start) returns None."""
    if result is None:
        state.report_warnings()
        return
    if render.notes is not None:
        render.notes(result, service, None)
    state.report_warnings()
    rich = render.rich or (lambda result: output.emit_text(render.text(result)))
    output.render(state.json, lambda: to_json(result), lambda: render.text(result), lambda: rich(result))
    if render.exit_code is not None and (code := render.exit_code(result, state.json)):
        raise typer.Exit(code)


def run(
    ctx: typer.Context, op: Operation, render: Render[Any], given: dict[str, Any], json: bool, yes: bool
) -> None:
    """Run op with the command line's values: from here on an error is a JSON document with --json."""
    state = state_of(ctx, json)
    values = op.from_command_line(given)
    service = op.service(state.session())
    confirm_first(op, service, values, yes)
    try:
        with (render.during or no_hooks)(values) as hooks:
            steps = render.steps(state.json) if render.steps is not None else {}
            terminal = render.terminal if render.terminal and not state.json and sys.stdout.isatty() else {}
            result = op.function(service, **values, **hooks, **steps, **terminal)
    except AibuddyError as error:
        code = render.failed(error, state.json) if render.failed is not None else None
        if code is None:
            raise
        raise typer.Exit(code) from None
    show(state, render, result, service)


def command(op: Operation, render: Render[Any]) -> Callable[..., None]:
    """The Typer command function of op: a signature Typer reads, over `run`."""
    parameters = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    for argument in op.arguments:
        kind, default = _typer_parameter(argument)
        parameters.append(
            inspect.Parameter(argument.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        )
        if argument.param.file:
            name, kind, default = _file_parameter(argument)
            parameters.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
            )
    if op.confirm is not None:
        yes = typer.Option(False, "--yes", "-y", help=YES_HELP)
        parameters.append(
            inspect.Parameter("yes", inspect.Parameter.KEYWORD_ONLY, default=yes, annotation=bool)
        )
    json = typer.Option(False, "--json", help=JSON_HELP)
    parameters.append(
        inspect.Parameter("json", inspect.Parameter.KEYWORD_ONLY, default=json, annotation=bool)
    )

    def invoke(ctx: typer.Context, **given: Any) -> None:
        json, yes = given.pop("json"), given.pop("yes", False)
        run(ctx, op, render, given, json, yes)

    invoke.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    invoke.__annotations__ = {p.name: p.annotation for p in parameters}
    invoke.__doc__ = op.help
    invoke.__name__ = op.words[-1].replace("-", "_")
    return invoke


def add_commands(
    app: typer.Typer,
    words: tuple[str, ...],
    renders: Mapping[str, Render[Any]],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """A command on app for each operation under words (("table", "column")); settings: further
    Typer settings of a command, by operation name."""
    for op in operations(words[0]):
        if op.words[:-1] == words:
            extra = (settings or {}).get(op.name, {})
            app.command(op.words[-1], **extra)(command(op, renders[op.name]))
