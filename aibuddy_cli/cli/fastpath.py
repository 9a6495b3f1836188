"""A lean route for the hot read commands scripts call in loops: `memory recall`, `kb search`,
`kb read`, `table filter`, `table reduce`, `table search`.

It parses their few options by hand and renders through `cli.output` / `cli.kb_output`, so it
never imports Typer, Rich or pydantic (~100-250 ms of start-up). It handles only well-formed
calls whose output is JSON or not going to a terminal; anything else (help, a usage error, a
person at a terminal) returns None and the Typer app runs instead. A parity test checks that both
routes print the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

if TYPE_CHECKING:
    from ..operations.registry import Operation

_GLOBAL_OPTIONS = ("--vault", "--user")
MAX_NUMBER = 1_000_000  # larger numbers go to Typer, which judges them


class Route(NamedTuple):
    positionals: tuple[str, ...]
    options: dict[str, str]  # spelling -> argument name
    numbers: dict[str, int]  # arguments that are whole numbers, 1 (or `minimums`) to this maximum
    # The last two positionals are DOC ANCHOR or one citation DOC#ANCHOR, and a word that begins
    # with one '-' is a positional (an anchor such as `-operator`), as in the Typer app.
    citation: bool = False
    repeated: frozenset[str] = frozenset()  # options given any number of times: a list
    required: frozenset[str] = frozenset()  # options without which Typer reports a usage error
    variadic: bool = False  # the last positional takes any number of words: a list
    minimums: dict[str, int] = {}  # numbers whose lowest value is not 1 (never mutated)


def route_of(op: Operation) -> Route | None:
    """The route of an operation the fast path may run, from its declared arguments."""
    positionals: list[str] = []
    options: dict[str, str] = {}
    numbers: dict[str, int] = {}
    minimums: dict[str, int] = {}
    repeated, required = set(), set()
    variadic = citation = False
    for argument in op.arguments:
        param = argument.param
        if param.file:
            return None  # reading a file is the Typer app's
        if argument.positional:
            positionals.append(argument.name)
            variadic = _is_list(argument.type)
            citation = citation or param.citation
            continue
        options.update(dict.fromkeys(param.flags, argument.name))
        if _base(argument.type) is int:
            numbers[argument.name] = param.maximum or MAX_NUMBER
            if param.minimum is not None and param.minimum != 1:
                minimums[argument.name] = param.minimum
        if _is_list(param.cli_type or argument.type):
            repeated.add(argument.name)
        if argument.required:
            required.add(argument.name)
    return Route(
        tuple(positionals),
        options,
        numbers,
        citation,
        frozenset(repeated),
        frozenset(required),
        variadic,
        minimums,
    )


def routes() -> dict[tuple[str, ...], Route]:
    """Every fast route, by its command words (for tests and help; `run` finds one by its words)."""
    from ..operations.registry import operations

    found = {op.words: route_of(op) for op in operations() if op.fast}
    return {words: route for words, route in found.items() if route is not None}


def _base(kind: Any) -> Any:
    """int of `int | None`."""
    parts = [part for part in getattr(kind, "__args__", ()) if part is not type(None)]
    return parts[0] if type(None) in getattr(kind, "__args__", ()) and len(parts) == 1 else kind


def _is_list(kind: Any) -> bool:
    return getattr(_base(kind), "__origin__", None) is list


def _fast_operation(words: Sequence[str]) -> Operation | None:
    """The operation these words name, if the fast path may run it."""
    from ..operations.registry import GROUPS, find

    if len(words) < 2 or words[0] not in GROUPS:
        return None
    try:
        op = find(" ".join(words[:2]))
    except KeyError:
        return None
    return op if op.fast else None


def _split_globals(argv: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
    """Leading --vault/--user options (both spellings), then the rest; None if malformed."""
    options: dict[str, str] = {}
    index = 0
    while index < len(argv) and argv[index].startswith("--"):
        name, has_value, value = argv[index].partition("=")
        if name not in _GLOBAL_OPTIONS:
            return None
        if not has_value:
            if index + 1 >= len(argv):
                return None
            index += 1
            value = argv[index]
        options[name[2:]] = value
        index += 1
    return options, list(argv[index:])


def parse(route: Route, args: Sequence[str]) -> dict[str, Any] | None:
    """The route's arguments plus "json", or None for anything the Typer app should judge."""
    parsed: dict[str, Any] = {"json": False}
    positionals: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        # Only long options take "=value" (click reads "-n=1" as the value "=1").
        name, has_value, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg == "--json":
            parsed["json"] = True
        elif name in route.options:
            if not has_value:
                if index + 1 >= len(args):
                    return None
                index += 1
                value = args[index]
            key = route.options[name]
            if value == "--json" or value.partition("=")[0] in route.options:
                return None  # `--where --json`: a value left out, which the Typer app reports
            if key in route.numbers:
                low = route.minimums.get(key, 1)
                if not (value.isascii() and value.isdigit()) or not low <= int(value) <= route.numbers[key]:
                    return None
                parsed[key] = int(value)
            elif key in route.repeated:
                parsed.setdefault(key, []).append(value)
            else:
                parsed[key] = value
        elif arg == "--":
            positionals.extend(args[index + 1 :])
            break
        elif arg.startswith("-") and (arg.startswith("--") or not route.citation):
            return None
        else:
            positionals.append(arg)
        index += 1
    if route.citation:
        positionals = _cited(positionals, len(route.positionals))
    if not route.required <= parsed.keys():
        return None
    if route.variadic:
        fixed = len(route.positionals) - 1
        if len(positionals) < fixed:
            return None
        parsed[route.positionals[-1]] = positionals[fixed:]
        positionals = positionals[:fixed]
        parsed.update(zip(route.positionals[:fixed], positionals, strict=True))
        return parsed
    if len(positionals) != len(route.positionals):
        return None
    parsed.update(zip(route.positionals, positionals, strict=True))
    return parsed


def _cited(positionals: list[str], count: int) -> list[str]:
    """positionals with a final citation DOC#ANCHOR split in two; [] if the call is malformed
    (no anchor, or a citation and an anchor), which the Typer app then reports."""
    from ..knowledge.documents import split_citation

    citation = split_citation(positionals[-1]) if positionals else None
    if len(positionals) == count - 1 and citation is not None:
        return [*positionals[:-1], *citation]
    if len(positionals) == count and split_citation(positionals[-2]) is not None:
        return []
    return positionals


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int | None:
    """Run argv on the fast path and return its exit code, or None to let Typer handle it."""
    if any(arg in ("--help", "-h", "--version") for arg in argv):
        return None
    if len(argv) == 6 and argv[0] == "git" and argv[1] == "merge-file" and not argv[2].startswith("-"):
        # The merge driver: git runs it once per file both sides changed, with no vault to open.
        from pathlib import Path

        from ..app.merge_driver import merge_file

        base, current, other, path = argv[2:]
        import os

        return merge_file(Path(base), Path(current), Path(other), path, environ=os.environ)
    split = _split_globals(argv)
    if split is None:
        return None
    options, rest = split
    if rest == ["hook", "claude-code"]:  # a coding agent waits on every event: no Typer, no Rich
        import os
        import sys

        from ..hooks.claude_code import run_claude_code

        vault, user = options.get("vault"), options.get("user")
        return run_claude_code(vault, user, sys.stdin.buffer, stdout, stderr, os.environ)
    op = _fast_operation(rest)
    route = None if op is None else route_of(op)
    if op is None or route is None:
        return None
    args = parse(route, rest[2:])
    if args is None or (not args["json"] and stdout.isatty()):
        return None
    json_mode = args.pop("json")

    import importlib

    from ..app.session import Session
    from ..errors import EXPECTED, AibuddyError, as_aibuddy_error
    from ..jsonvalues import to_json
    from . import output

    render = importlib.import_module(f"aibuddy_cli.cli.{op.words[0]}_output").RENDERS[op.name]
    warnings: list[str] = []  # the session's sink: printed even if the command fails
    session: Session | None = None
    try:
        session = Session.locate(options.get("vault"), options.get("user"), warnings=warnings)
        service = op.service(session)
        result = op.function(service, **op.from_command_line(args))
        if render.notes is not None:
            render.notes(result, service, stderr)
    except EXPECTED as error:  # as the Typer app's RootGroup
        output.report_warnings(warnings, stderr)
        return output.report_error(as_aibuddy_error(error), json_mode, stdout, stderr)
    finally:
        if session is not None:
            session.close()
    output.report_warnings(warnings, stderr)
    try:
        if json_mode:
            output.emit_json(to_json(result), stdout)
        else:
            output.emit_text(render.text(result), stdout)
    except AibuddyError as error:  # an answer JSON cannot hold (NaN): said, never half printed
        return output.report_error(error, json_mode, stdout, stderr)
    return 0
