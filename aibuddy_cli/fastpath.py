"""A lean route for the hot read commands scripts call in loops: `memory recall`, `kb search`,
`kb read`, `table filter`, `table reduce`, `table search`.

It parses their few options by hand and renders through `cli.output` / `cli.kb_output`, so it
never imports Typer, Rich or pydantic (~100-250 ms of start-up). It handles only well-formed
calls whose output is JSON or not going to a terminal; anything else (help, a usage error, a
person at a terminal) returns None and the Typer app runs instead. A parity test checks that both
routes print the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

if TYPE_CHECKING:
    from .session import Session

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


ROUTES: dict[tuple[str, ...], Route] = {
    ("memory", "recall"): Route(("query",), {"--limit": "limit", "-n": "limit"}, {"limit": MAX_NUMBER}),
    ("kb", "search"): Route(
        ("query",),
        {"--limit": "limit", "-n": "limit", "--task": "task", "--status": "status"},
        {"limit": 1000},
    ),
    ("kb", "read"): Route(
        ("doc", "anchor"),
        {"--cursor": "cursor", "--max-chars": "max_chars", "--task": "task", "--status": "status"},
        {"max_chars": MAX_NUMBER},
        citation=True,
    ),
    ("table", "filter"): Route(
        ("tables",),
        {"--where": "where", "--columns": "columns", "--limit": "limit", "-n": "limit", "--offset": "offset"},
        {"limit": MAX_NUMBER, "offset": 2**63 - 1},  # an offset is any 64-bit row count, as in Typer
        variadic=True,
        minimums={"offset": 0},
    ),
    ("table", "reduce"): Route(
        ("table",),
        {
            "--metric": "metric",
            "-m": "metric",
            "--column": "columns",
            "-c": "columns",
            "--where": "where",
            "--group-by": "group_by",
            "-g": "group_by",
        },
        {},
        repeated=frozenset({"columns", "group_by"}),
        required=frozenset({"metric", "columns"}),
    ),
    ("table", "search"): Route(
        ("query",),
        {"--table": "tables", "-t": "tables", "--limit": "limit", "-n": "limit"},
        {"limit": MAX_NUMBER},
        repeated=frozenset({"tables"}),
    ),
}


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
    from .knowledge.documents import split_citation

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

        from .gitmerge import merge_file

        base, current, other, path = argv[2:]
        return merge_file(Path(base), Path(current), Path(other), path)
    split = _split_globals(argv)
    if split is None:
        return None
    options, rest = split
    route = ROUTES.get(tuple(rest[:2]))
    if route is None:
        return None
    args = parse(route, rest[2:])
    if args is None or (not args["json"] and stdout.isatty()):
        return None

    from .cli import output
    from .errors import AibuddyError, as_aibuddy_error
    from .session import Session

    warnings: list[str] = []  # the session's sink: printed even if the command fails
    session: Session | None = None
    try:
        session = Session.locate(options.get("vault"), options.get("user"), warnings=warnings)
        document, text = _HANDLERS[tuple(rest[:2])](session, args, stderr)
    except (AibuddyError, OSError, UnicodeError) as error:  # as the Typer app's RootGroup
        output.report_warnings(warnings, stderr)
        return output.report_error(as_aibuddy_error(error), args["json"], stdout, stderr)
    finally:
        if session is not None:
            session.close()
    output.report_warnings(warnings, stderr)
    try:
        if args["json"]:
            output.emit_json(document(), stdout)
        else:
            output.emit_text(text(), stdout)
    except AibuddyError as error:  # an answer JSON cannot hold (NaN): said, never half printed
        return output.report_error(error, args["json"], stdout, stderr)
    return 0


Rendered = tuple[Callable[[], Any], Callable[[], str]]


def _recall(session: Session, args: dict[str, Any], stderr: TextIO) -> Rendered:
    from .cli import memory_output

    result = session.memory.recall(args["query"], args.get("limit"))
    memory_output.report_problems(result.problems, session.memory.prefix, stderr)
    return result.to_json, lambda: memory_output.recall_text(result)


def _search(session: Session, args: dict[str, Any], stderr: TextIO) -> Rendered:
    from .cli import kb_output
    from .knowledge.results import SearchResults

    task = args.get("task")
    hits = session.knowledge.search(
        args["query"], task=task, limit=args.get("limit", 10), status=args.get("status", "ready")
    )
    return SearchResults(args["query"], task, hits).to_json, lambda: kb_output.hits_text(hits)


def _read(session: Session, args: dict[str, Any], stderr: TextIO) -> Rendered:
    from .cli import kb_output

    section_page = session.knowledge.read(
        args["doc"],
        args["anchor"],
        cursor=args.get("cursor"),
        max_chars=args.get("max_chars"),
        task=args.get("task"),
        status=args.get("status", "ready"),
    )
    return section_page.to_json, lambda: kb_output.page_text(section_page)


def _table_filter(session: Session, args: dict[str, Any], stderr: TextIO) -> Rendered:
    from .cli import table_output
    from .tables.schema import names_list

    result = session.tables.queries.filter(
        args["tables"],
        args.get("where"),
        names_list(args.get("columns")),
        args.get("limit"),
        args.get("offset", 0),
    )
    return result.to_json, lambda: table_output.filter_text(result)


def _table_reduce(session: Session, args: dict[str, Any], stderr: TextIO) -> Rendered:
    from .cli import table_output

    result = session.tables.queries.reduce(
        args["table"], args["metric"], args["columns"], args.get("where"), args.get("group_by", [])
    )
    return result.to_json, lambda: table_output.reduction_text(result)


def _table_search(session: Session, args: dict[str, Any], stderr: TextIO) -> Rendered:
    from .cli import table_output

    result = session.tables.queries.search(args["query"], args.get("tables", []), args.get("limit"))
    return result.to_json, lambda: table_output.search_text(result)


_HANDLERS: dict[tuple[str, ...], Callable[[Session, dict[str, Any], TextIO], Rendered]] = {
    ("memory", "recall"): _recall,
    ("kb", "search"): _search,
    ("kb", "read"): _read,
    ("table", "filter"): _table_filter,
    ("table", "reduce"): _table_reduce,
    ("table", "search"): _table_search,
}
