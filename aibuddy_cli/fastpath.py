"""A lean route for the hot read command scripts call in loops (`memory recall`).

It parses its few options by hand and renders through `cli.output`, so it never imports Typer, Rich or
pydantic (~100-250 ms of start-up). It handles only well-formed calls whose output is JSON or not
going to a terminal; anything else (help, a usage error, a person at a terminal) returns None and
the Typer app runs instead. A parity test checks both routes print the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

_GLOBAL_OPTIONS = ("--vault", "--user")


def _split_globals(argv: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
    """Leading --vault/--user options (both spellings), then the rest; None if malformed."""
    options: dict[str, str] = {}
    index = 0
    while index < len(argv) and argv[index].startswith("--"):
        arg = argv[index]
        name, has_value, value = arg.partition("=")
        if name not in _GLOBAL_OPTIONS:
            return None
        if not has_value:
            if index + 1 >= len(argv):
                return None
            value = argv[index + 1]
            index += 1
        options[name[2:]] = value
        index += 1
    return options, list(argv[index:])


def _parse_recall(args: Sequence[str]) -> tuple[str, int | None, bool] | None:
    """QUERY [--limit N | -n N] [--json], in any order; None for anything else."""
    query: str | None = None
    limit: int | None = None
    as_json = False
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--json":
            as_json = True
        elif arg in ("--limit", "-n") or arg.startswith("--limit="):
            if "=" in arg:
                value = arg.split("=", 1)[1]
            elif index + 1 < len(args):
                index += 1
                value = args[index]
            else:
                return None
            if not value.isdigit() or int(value) < 1:
                return None
            limit = int(value)
        elif arg == "--":
            rest = args[index + 1 :]
            if query is not None or len(rest) != 1:
                return None
            return rest[0], limit, as_json
        elif arg.startswith("-") or query is not None:
            return None
        else:
            query = arg
        index += 1
    return None if query is None else (query, limit, as_json)


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int | None:
    """Run argv on the fast path and return its exit code, or None to let Typer handle it."""
    if any(arg in ("--help", "-h", "--version") for arg in argv):
        return None
    split = _split_globals(argv)
    if split is None:
        return None
    options, rest = split
    if rest[:2] != ["memory", "recall"]:
        return None
    parsed = _parse_recall(rest[2:])
    if parsed is None:
        return None
    query, limit, as_json = parsed
    if not as_json and stdout.isatty():
        return None

    from .cli import output
    from .errors import AibuddyError
    from .memory.service import MemoryService
    from .vault import open_vault_and_user

    try:
        vault, user = open_vault_and_user(options.get("vault"), options.get("user"), os.environ, Path.cwd())
        memory = MemoryService(vault, user)
        result = memory.recall(query, limit)
    except AibuddyError as error:
        return output.report_error(error, as_json, stdout, stderr)
    output.report_problems(result.problems, memory.prefix, stderr)
    output.report_warnings(result.warnings, stderr)
    if as_json:
        output.emit_json(output.recall_json(user, result), stdout)
    else:
        output.emit_text(output.recall_text(result), stdout)
    return 0
