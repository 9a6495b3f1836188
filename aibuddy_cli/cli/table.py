"""`aibuddy table …`: typed knowledge tables; create, add, filter, reduce, search, join, reshape."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..errors import Aborted, InvalidInput, NotFound, UsageError
from ..tables.schema import (
    COLUMN_TYPES,
    DEFAULT_KEY,
    INT_RANGE,
    ColumnSpec,
    check_lossy,
    json_text,
    names_list,
)
from . import output, table_output
from .context import AppState, state_of, stdin_is_terminal
from .output import render

if TYPE_CHECKING:  # the table modules load when a table command runs, not for every command's help
    from ..tables.changes import Change, Changes
    from ..tables.service import TableService

app = typer.Typer(help="Knowledge tables: typed rows in git-friendly CSV files.", no_args_is_help=True)
columns_app = typer.Typer(
    help="Add, derive, delete, rename, copy, move, transform columns.", no_args_is_help=True
)
app.add_typer(columns_app, name="column")


def _not_an_option(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """An option's value spelled like one of the command's own options (`--where --json`) is that
    option, given where a value was due: a usage error, never a filter or a text named --json."""
    own = {name for p in ctx.command.get_params(ctx) for name in (*p.opts, *p.secondary_opts)}
    for item in value if isinstance(value, list | tuple) else [value]:
        if isinstance(item, str) and item.startswith("-") and item.partition("=")[0] in own:
            raise typer.BadParameter(
                f"{item!r} is one of this command's options, so the value of {param.opts[0]} is missing"
            )
    return value


def _value_option(default: Any, *names: str, **settings: Any) -> Any:
    """A text option (a filter, JSON, a name): its value may not be one of the command's options."""
    return typer.Option(default, *names, callback=_not_an_option, **settings)


JsonOption = typer.Option(False, "--json", help="Print one JSON document on stdout.")
WhereOption = _value_option(
    None, "--where", help='A filter: a Python boolean expression, e.g. age > 30 and city == "Berlin".'
)
FILE_LIMIT = 256 * 1024 * 1024  # the largest file `table add --file` reads
LOSSY_VERB = "convert values lossily"
YesOption = typer.Option(False, "--yes", "-y", help="Do not ask; required when stdin is not a terminal.")
LossyOption = _value_option(
    None,
    "--lossy",
    help="Convert values that do not convert exactly anyway: round (to the nearest value) or drop "
    "(empty them). Without it such a change is refused and nothing is written.",
)


def _tables(state: AppState) -> TableService:
    return state.session().tables


def _changed(state: AppState, change: Change | Changes) -> None:
    state.report_warnings()
    text = "\n".join(table_output.change_text(c) for c in change.changes)
    render(state.json, change.to_json, lambda: text, lambda: output.emit_text(text))


def _confirm(yes: bool, question: str, verb: str = "delete", done: str = "deleted") -> None:
    """Ask on a terminal (stderr: stdout may be JSON); without one, --yes is required."""
    if yes:
        return
    if not stdin_is_terminal():
        raise UsageError(f"refusing to {verb} without --yes when stdin is not a terminal")
    if not typer.confirm(question, default=False, err=True):
        raise Aborted(f"nothing {done}")


def _json_value(text: str, what: str) -> Any:
    """Strict JSON (no NaN or Infinity, no repeated key): what is stored must print as JSON."""
    from ..jsonvalues import loads

    try:
        return loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{what} is not JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput(f"{what} is nested too deeply") from None


# --- tables --------------------------------------------------------------------------------


@app.command("list")
def list_(ctx: typer.Context, json: bool = JsonOption) -> None:
    """Your tables and your teams' tables."""
    state = state_of(ctx, json)
    service = _tables(state)
    from ..tables.state import TableList

    result = TableList(service.state.user, service.queries.list_tables())
    state.report_warnings()
    text = table_output.tables_text(result.tables)
    render(state.json, result.to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def show(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="NAME or team/<team>/NAME."),
    json: bool = JsonOption,
) -> None:
    """A table's description, key, columns and row count."""
    state = state_of(ctx, json)
    info = _tables(state).queries.show(table)
    state.report_warnings()
    text = table_output.info_text(info)
    render(state.json, info.to_json, lambda: text, lambda: output.emit_text(text))


def _column_spec(text: str) -> ColumnSpec:
    """A column as `table create -c` and `table column add` spell it: name:type[:description]."""
    name, _, rest = text.partition(":")
    type_, _, description = rest.partition(":")
    if not type_:
        raise UsageError(f"column {text!r}: write name:type[:description] ({', '.join(COLUMN_TYPES)})")
    return ColumnSpec(name, type_, description)


@app.command()
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="NAME (yours) or team/<team>/NAME."),
    description: str = _value_option("", "--description", "-d", help="What the table holds."),
    key: str = _value_option(DEFAULT_KEY, "--key", help="The name of the key column aibuddy assigns."),
    columns: list[str] = _value_option([], "--column", "-c", help="name:type[:description], repeatable."),
    json: bool = JsonOption,
) -> None:
    """Create an empty table (columns can also come with the first rows)."""
    state = state_of(ctx, json)
    info = _tables(state).changes.create(name, description, key, [_column_spec(c) for c in columns])
    state.report_warnings()
    text = f"created table {info.ref.qualified}"
    render(state.json, info.to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def add(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    rows: list[str] = _value_option([], "--row", "-r", help="One row as a JSON object, repeatable."),
    file: str | None = _value_option(None, "--file", "-f", help="JSONL or CSV rows ('-' reads stdin)."),
    json: bool = JsonOption,
) -> None:
    """Add rows; columns the table lacks are created with the type their values suggest."""
    state = state_of(ctx, json)
    if bool(rows) == bool(file):
        raise UsageError("give rows with --row, or a file with --file (not both)")
    if file:
        parsed, from_text = _file_rows(file)
    else:
        parsed = [_json_value(row, f"--row {number}") for number, row in enumerate(rows, 1)]
        from_text = False
    with _working(f"adding {len(parsed)} rows to {table}", len(parsed) >= 1000):
        change = _tables(state).changes.add_rows(table, parsed, from_text=from_text)
    _changed(state, change)


@contextmanager
def _working(message: str, long: bool) -> Iterator[None]:
    """A spinner on stderr while long work runs, for a person at a terminal; nothing otherwise."""
    if not (long and sys.stderr.isatty()):
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(message):
        yield


def _bounded_read(path: Path) -> bytes:
    """At most FILE_LIMIT + 1 bytes of path: a file too large is refused by its size before it
    is read, and one whose size is unknown (a device, a pipe) is read no further than that."""
    with path.open("rb") as handle:
        import os

        if os.fstat(handle.fileno()).st_size > FILE_LIMIT:
            raise InvalidInput(f"{path} is larger than {FILE_LIMIT >> 20} MiB")
        return handle.read(FILE_LIMIT + 1)


def _file_rows(file: str) -> tuple[list[Any], bool]:
    """The rows of a JSONL or CSV file (CSV when the first line is not a JSON object), and
    whether their values are text."""
    import csv
    import io

    source = "standard input" if file == "-" else file
    try:
        data = sys.stdin.buffer.read(FILE_LIMIT + 1) if file == "-" else _bounded_read(Path(file))
    except FileNotFoundError:
        raise NotFound(f"{source} not found") from None
    except IsADirectoryError:
        raise InvalidInput(f"{source} is a folder") from None
    if len(data) > FILE_LIMIT:
        raise InvalidInput(f"{source} is larger than {FILE_LIMIT >> 20} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(f"{source} is not UTF-8 text") from None
    if text.lstrip().startswith("{"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                rows.append(_json_value(line, f"{source} line {number}"))
        return rows, False
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = reader.fieldnames or []
        if len(set(header)) != len(header):
            raise InvalidInput(f"{source} line 1: a column is repeated in the header")
        rows = []
        for row in reader:
            if None in row:  # more fields than the header names: their values would be lost
                raise InvalidInput(
                    f"{source} line {reader.line_num}: {len(header) + len(row[None])} fields where "
                    f"the header has {len(header)}"
                )
            rows.append(row)
    except csv.Error as exc:
        raise InvalidInput(f"{source}: {exc}") from None
    return rows, True


@app.command("update-rows")
def update_rows(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    where: str = _value_option(..., "--where", help='Which rows ("True" for all).'),
    values: str = _value_option(..., "--set", help='The new values, a JSON object: {"city": "Paris"}.'),
    json: bool = JsonOption,
) -> None:
    """Set values in the rows a filter selects."""
    state = state_of(ctx, json)
    new = _json_value(values, "--set")
    if not isinstance(new, dict):
        raise InvalidInput("--set must be a JSON object of column names and values")
    _changed(state, _tables(state).changes.update_rows(table, where, new))


@app.command("delete-rows")
def delete_rows(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    where: str = _value_option(..., "--where", help='Which rows ("True" for all).'),
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Delete the rows a filter selects (the journal keeps them)."""
    state = state_of(ctx, json)
    _confirm(yes, f"Delete the rows of {table} where {where}?")
    _changed(state, _tables(state).changes.delete_rows(table, where))


@app.command()
def rename(
    ctx: typer.Context,
    old: str = typer.Argument(...),
    new: str = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Rename a table within its folder."""
    state = state_of(ctx, json)
    _changed(state, _tables(state).changes.rename(old, new))


@app.command()
def delete(
    ctx: typer.Context,
    tables: list[str] = typer.Argument(...),
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Delete tables (the journal keeps their schema and rows)."""
    state = state_of(ctx, json)
    _confirm(yes, f"Delete {', '.join(tables)}?")
    from ..tables.changes import Changes

    _changed(state, Changes(_tables(state).changes.delete(tables)))


# --- reading ---------------------------------------------------------------------------------


@app.command("filter")
def filter_(
    ctx: typer.Context,
    tables: list[str] = typer.Argument(None, help="Tables (default: every table you may see)."),
    where: str | None = WhereOption,
    columns: str | None = _value_option(None, "--columns", help="Columns to show, comma-separated."),
    limit: int | None = typer.Option(
        None, "--limit", "-n", min=1, help="At most this many rows a table (100)."
    ),
    offset: int = typer.Option(0, "--offset", min=0, max=INT_RANGE[1], help="Skip this many rows first."),
    json: bool = JsonOption,
) -> None:
    """Rows where a filter holds, ordered by key."""
    state = state_of(ctx, json)
    result = _tables(state).queries.filter(tables or [], where, names_list(columns), limit, offset)
    state.report_warnings()

    def rich() -> None:
        for rowset in result.tables:
            title = f"{rowset.table}: {len(rowset.rows)} of {rowset.total} row(s)"
            table_output.show_rows(title, rowset.columns, rowset.rows)

    render(state.json, result.to_json, lambda: table_output.filter_text(result), rich)


@app.command()
def reduce(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    metric: str = _value_option(
        ..., "--metric", "-m", help="count, sum, mean, median, min, max, var, std, mode."
    ),
    columns: list[str] = _value_option(..., "--column", "-c", help="A column to reduce, repeatable."),
    where: str | None = WhereOption,
    group_by: list[str] = _value_option([], "--group-by", "-g", help="A column to group by, repeatable."),
    json: bool = JsonOption,
) -> None:
    """A metric of columns, over the rows a filter selects, optionally by group."""
    state = state_of(ctx, json)
    result = _tables(state).queries.reduce(table, metric, columns, where, group_by)
    state.report_warnings()
    text = table_output.reduction_text(result)
    render(state.json, result.to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help='Words, CJK text, "quoted phrases".'),
    tables: list[str] = _value_option([], "--table", "-t", help="Search only this table, repeatable."),
    limit: int | None = typer.Option(None, "--limit", "-n", min=1, help="At most this many rows (10)."),
    json: bool = JsonOption,
) -> None:
    """Rows ranked by how well their text matches."""
    state = state_of(ctx, json)
    result = _tables(state).queries.search(query, tables, limit)
    state.report_warnings()
    text = table_output.search_text(result)
    render(state.json, result.to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def join(
    ctx: typer.Context,
    left: str = typer.Argument(...),
    right: str = typer.Argument(...),
    on: str = _value_option(..., "--on", help="How rows pair: left.col == right.col (or the tables' names)."),
    where: str | None = WhereOption,
    columns: str | None = _value_option(None, "--columns", help="table.column names, comma-separated."),
    limit: int | None = typer.Option(None, "--limit", "-n", min=1, help="At most this many rows (100)."),
    json: bool = JsonOption,
) -> None:
    """Rows of two tables paired where --on holds."""
    state = state_of(ctx, json)
    result = _tables(state).queries.join(left, right, on, where, names_list(columns), limit)
    state.report_warnings()

    def rich() -> None:
        table_output.show_rows(
            f"{result.left} ⋈ {result.right}: {result.total} pair(s)", result.columns, result.rows
        )

    render(state.json, result.to_json, lambda: table_output.join_text(result), rich)


# --- columns ---------------------------------------------------------------------------------


@columns_app.command("add")
def column_add(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    column: str = typer.Argument(
        ..., metavar="NAME:TYPE[:DESCRIPTION]", help="As table create's --column (or NAME TYPE)."
    ),
    type_: str | None = typer.Argument(
        None, metavar="[TYPE]", help=f"The type, when NAME is given alone: {', '.join(COLUMN_TYPES)}."
    ),
    description: str = _value_option("", "--description", "-d", help="What the column holds."),
    json: bool = JsonOption,
) -> None:
    """An empty column: `table column add T email:str` (`T email str` also works)."""
    state = state_of(ctx, json)
    if type_ is not None and ":" in column:
        raise UsageError(f"{column!r} names a type already: write name:type, or name and type apart")
    spec = _column_spec(column) if type_ is None else ColumnSpec(column, type_)
    if spec.description and description:
        raise UsageError("give the description once: in name:type:description or with --description")
    change = _tables(state).changes.add_column(table, spec.name, spec.type, spec.description or description)
    _changed(state, change)


@columns_app.command("derive")
def column_derive(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    column: str = typer.Argument(...),
    expression: str = typer.Argument(..., help="e.g. price * quantity, lower(name), len(tags)."),
    type_: str | None = _value_option(None, "--type", help="The new column's type (default: inferred)."),
    lossy: str | None = LossyOption,
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """A column computed from the others; refused when a value does not fit the type exactly."""
    state = state_of(ctx, json)
    if lossy:
        _confirm(yes, f"Derive {column} in {table}, {_lossy_words(lossy)}?", LOSSY_VERB, "changed")
    _changed(state, _tables(state).changes.derive_column(table, column, expression, type_, lossy))


@columns_app.command("delete")
def column_delete(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    column: str = typer.Argument(...),
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Remove a column and its values (the journal keeps them)."""
    state = state_of(ctx, json)
    _confirm(yes, f"Delete column {column} of {table} and its values?")
    _changed(state, _tables(state).changes.delete_column(table, column))


@columns_app.command("rename")
def column_rename(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    old: str = typer.Argument(...),
    new: str = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Give a column a new name."""
    state = state_of(ctx, json)
    _changed(state, _tables(state).changes.rename_column(table, old, new))


@columns_app.command("copy")
def column_copy(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    column: str = typer.Argument(...),
    to_table: str = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Copy a column to another table, row by row where the keys are equal."""
    state = state_of(ctx, json)
    from ..tables.changes import Changes

    _changed(state, Changes(_tables(state).changes.copy_column(table, column, to_table)))


@columns_app.command("move")
def column_move(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    column: str = typer.Argument(...),
    to_table: str = typer.Argument(...),
    lossy: str | None = _value_option(
        None, "--lossy", help="drop: leave out the values the other table has no row for (else refused)."
    ),
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Move a column to another table, row by row where the keys are equal; refused when a value
    would be left behind."""
    state = state_of(ctx, json)
    from ..tables.changes import Changes

    if lossy:
        question = f"Move {column} to {to_table}, dropping the values it has no row for?"
        _confirm(yes, question, "drop values", "moved")
    changes = _tables(state).changes.copy_column(table, column, to_table, move=True, lossy=lossy)
    _changed(state, Changes(changes))


@columns_app.command("transform")
def column_transform(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    column: str = typer.Argument(...),
    type_: str | None = _value_option(None, "--type", help="Convert the values to this type."),
    expression: str | None = _value_option(None, "--expression", "-e", help="Replace the values by this."),
    lossy: str | None = LossyOption,
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Convert a column to another type, or recompute it. A value that does not convert exactly
    refuses the change (exit 6, naming it) unless --lossy says what to do with it."""
    state = state_of(ctx, json)
    if lossy:
        _confirm(yes, f"Transform {column} of {table}, {_lossy_words(lossy)}?", LOSSY_VERB, "changed")
    _changed(state, _tables(state).changes.transform_column(table, column, type_, expression, lossy))


def _lossy_words(lossy: str) -> str:
    check_lossy(lossy)
    if lossy == "round":
        return "rounding values that do not convert exactly"
    return "emptying values that do not convert exactly"


# --- natural language ------------------------------------------------------------------------


def _agent(state: AppState) -> Any:
    from ..tables.loops import TableAgent

    session = state.session()
    return TableAgent(session.tables, session.environ)


@app.command()
def ask(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="What you want to know from your tables."),
    json: bool = JsonOption,
) -> None:
    """Answer from your tables through read-only tools (matching rows without a model)."""
    state = state_of(ctx, json)
    answer = _agent(state).ask(question)
    state.report_warnings()
    text = answer.answer
    if answer.hits:
        from ..tables.queries import SearchResult

        text += "\n" + table_output.search_text(SearchResult(question, answer.method, answer.hits))
    render(state.json, answer.to_json, lambda: text, lambda: output.emit_text(text))


def _change(
    ctx: typer.Context, kind: str, request: str, dry_run: bool, instructions: str | None, json: bool
) -> None:
    state = state_of(ctx, json)
    run = _agent(state).change(kind, request, dry_run=dry_run, instructions=instructions)
    state.report_warnings()
    lines = [run.summary, ""]
    for operation in run.operations:
        arguments = output.one_line(json_text(operation["arguments"]))
        lines.append(
            f"{'applied' if operation['applied'] else 'not applied'}\t{operation['tool']}\t{arguments}"
        )
    if dry_run:
        lines.append("(dry run: nothing applied)")
    text = "\n".join(lines).rstrip()
    render(state.json, run.to_json, lambda: text, lambda: output.emit_text(text))


DryRunOption = typer.Option(False, "--dry-run", help="Show the operations the model chooses; apply none.")
InstructionsOption = _value_option(None, "--instructions", help="Guidance for this call.")


@app.command()
def update(
    ctx: typer.Context,
    request: str = typer.Argument(..., help="The end state you want, not the steps."),
    dry_run: bool = DryRunOption,
    instructions: str | None = InstructionsOption,
    json: bool = JsonOption,
) -> None:
    """Bring your tables to a described end state (a model with table tools; journaled)."""
    _change(ctx, "update", request, dry_run, instructions, json)


@app.command()
def refactor(
    ctx: typer.Context,
    request: str = typer.Argument(..., help="How the tables should be structured."),
    dry_run: bool = DryRunOption,
    instructions: str | None = InstructionsOption,
    json: bool = JsonOption,
) -> None:
    """Restructure tables and columns (a model with table tools; journaled)."""
    _change(ctx, "refactor", request, dry_run, instructions, json)


@columns_app.command("vectorize")
def column_vectorize(
    ctx: typer.Context,
    table: str = typer.Argument(...),
    column: str = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Make a text or list column searchable by meaning (needs an embedding model)."""
    state = state_of(ctx, json)
    _changed(state, _tables(state).changes.vectorize_column(table, column))


@app.command()
def undo(
    ctx: typer.Context,
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Put back the files your last table update or refactor changed (if nothing changed since)."""
    from ..tables.undo import undo_last

    state = state_of(ctx, json)
    _confirm(yes, "Undo your last table update or refactor?", "undo", "undone")
    undone = undo_last(_tables(state).state)
    state.report_warnings()
    text = f"undid run {undone.run}: " + ", ".join(undone.files)
    render(state.json, undone.to_json, lambda: text, lambda: output.emit_text(text))
