"""`aibuddy memory …`: save, update, delete, show, list, manifest, recall, clear."""

from __future__ import annotations

import os
import sys

import typer

from ..errors import Aborted, InvalidInput, NotFound, UsageError
from ..memory.records import TYPES, read_body_file
from ..memory.service import RecordDeleted, RecordWrite
from ..vault import memory_key
from . import memory_output, output
from .context import state_of, stdin_is_terminal
from .output import render

app = typer.Typer(help="A user's long-term memory records.", no_args_is_help=True)

JsonOption = typer.Option(False, "--json", help="Print one JSON document on stdout.")
TypeHelp = f"One of: {', '.join(TYPES)}."
# The largest transcript `memory extract` reads (the window needs only its last turns).
TRANSCRIPT_LIMIT = 8 * 1024 * 1024


def _body(body: str | None, body_file: str | None) -> str | None:
    """The body given by --body or --body-file; stdin is read only when asked (`--body-file -`),
    so a command in a `while read` loop or after a pipe never swallows or waits for its input."""
    if body is not None and body_file is not None:
        raise UsageError("give either --body or --body-file, not both")
    if body_file is not None:
        return read_body_file(body_file, sys.stdin.buffer)
    return body


@app.command()
def save(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Record name (file stem): lowercase letters, digits, - and _."),
    type: str = typer.Option(..., "--type", "-t", help=TypeHelp),
    description: str = typer.Option(..., "--description", "-d", help="One line: what recall sees."),
    body: str | None = typer.Option(None, "--body", "-b", help="The body text (Markdown)."),
    body_file: str | None = typer.Option(
        None, "--body-file", "-f", help="Read the body from a file ('-' for stdin)."
    ),
    json: bool = JsonOption,
) -> None:
    """Create a record (provenance manual). Without --body or --body-file the body is empty;
    standard input is read only with --body-file -."""
    state = state_of(ctx, json)
    memory = state.session().memory
    text = _body(body, body_file) or ""
    record = memory.save(name, type=type, description=description, body=text)
    key = memory_key(memory.user, record.name)
    render(
        state.json,
        RecordWrite(key, record, True).to_json,
        lambda: f"saved {key}",
        lambda: output.emit_text(f"saved {key}"),
    )


@app.command()
def update(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The record to change."),
    type: str | None = typer.Option(None, "--type", "-t", help=TypeHelp),
    description: str | None = typer.Option(None, "--description", "-d", help="New one-line description."),
    body: str | None = typer.Option(None, "--body", "-b", help="New body text."),
    body_file: str | None = typer.Option(
        None, "--body-file", "-f", help="Read the new body from a file ('-' for stdin)."
    ),
    json: bool = JsonOption,
) -> None:
    """Change a record; name, provenance, created and recall telemetry are kept."""
    state = state_of(ctx, json)
    memory = state.session().memory
    result = memory.update(name, type=type, description=description, body=_body(body, body_file))
    key = memory_key(memory.user, name)
    message = f"updated {key}" if result.changed else f"{key} unchanged"
    render(
        state.json,
        RecordWrite(key, result.record, result.changed).to_json,
        lambda: message,
        lambda: output.emit_text(message),
    )


@app.command()
def delete(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The record to delete."),
    json: bool = JsonOption,
) -> None:
    """Delete one record."""
    state = state_of(ctx, json)
    memory = state.session().memory
    memory.delete(name)
    key = memory_key(memory.user, name)
    render(
        state.json,
        RecordDeleted(key).to_json,
        lambda: f"deleted {key}",
        lambda: output.emit_text(f"deleted {key}"),
    )


@app.command()
def show(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The record to show."),
    json: bool = JsonOption,
) -> None:
    """Show one record with its body and telemetry (does not count as a recall); --json adds
    `history`, what automatic memory replaced, newest first.

    A record with unresolved git conflict markers is shown as its raw text (with --json: the
    text, the file and each conflict's two sides) and exits 6."""
    from ..memory.records import MergeConflict

    state = state_of(ctx, json)
    memory = state.session().memory
    try:
        record = memory.show(name)
    except MergeConflict as conflict:
        raise typer.Exit(memory_output.show_conflict(conflict, state.json)) from None
    history = memory.history(name)

    def rich() -> None:
        from . import rich_output

        rich_output.show_record(record)

    render(
        state.json,
        lambda: {**record.to_json(), "history": history},
        lambda: memory_output.record_text(record, len(history)),
        rich,
    )


@app.command("list")
def list_(ctx: typer.Context, json: bool = JsonOption) -> None:
    """List the current user's records (malformed ones are reported on stderr and skipped)."""
    state = state_of(ctx, json)
    memory = state.session().memory
    result = memory.list_records()
    memory_output.report_problems(result.problems, memory.prefix)

    def rich() -> None:
        from . import rich_output

        rich_output.show_list(result)

    render(
        state.json,
        result.to_json,
        lambda: memory_output.list_text(result),
        rich,
    )


@app.command()
def manifest(
    ctx: typer.Context,
    query: str | None = typer.Option(
        None, "--query", "-q", help="Also reserve lines for this query's best matches."
    ),
    json: bool = JsonOption,
) -> None:
    """The recall window: at most 200 lines of type, file, modified date and description."""
    state = state_of(ctx, json)
    memory = state.session().memory
    result = memory.manifest(query)
    memory_output.report_problems(result.problems, memory.prefix)

    def rich() -> None:
        from . import rich_output

        rich_output.show_manifest(result)

    render(
        state.json,
        result.to_json,
        lambda: memory_output.manifest_text(result),
        rich,
    )


@app.command()
def recall(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What the assistant is about to do or was asked."),
    limit: int | None = typer.Option(None, "--limit", "-n", min=1, help="Bodies to read (at most 5)."),
    json: bool = JsonOption,
) -> None:
    """Select the relevant records (model, else lexical) and read at most 5 bodies."""
    state = state_of(ctx, json)
    memory = state.session().memory
    result = memory.recall(query, limit)
    memory_output.report_problems(result.problems, memory.prefix)
    state.report_warnings()

    def rich() -> None:
        from . import rich_output

        rich_output.show_recall(result)

    render(
        state.json,
        result.to_json,
        lambda: memory_output.recall_text(result),
        rich,
    )


@app.command()
def clear(
    ctx: typer.Context,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask; required when stdin is not a terminal."),
    json: bool = JsonOption,
) -> None:
    """Remove ALL of the current user's memory records. Asks first on a terminal."""
    state = state_of(ctx, json)
    memory = state.session().memory
    if not yes:
        if not stdin_is_terminal():
            raise UsageError("refusing to clear memory without --yes when stdin is not a terminal")
        count = memory.count()
        question = f"Delete all {count} memory record(s) of user {memory.user}?"
        if not typer.confirm(question, default=False, err=True):  # stdout may be JSON
            raise Aborted("nothing removed")
    cleared = memory.clear()
    output.report_warnings(f"not removed: {problem}" for problem in cleared.not_removed)
    message = f"removed {len(cleared.removed)} record(s) of user {memory.user}"
    render(
        state.json,
        cleared.to_json,
        lambda: message,
        lambda: output.emit_text(message),
    )


@app.command()
def extract(
    ctx: typer.Context,
    transcript: str = typer.Option(
        ...,
        "--transcript",
        help="JSONL of {role, content, tool_calls?} messages, at most 8 MiB ('-' reads stdin).",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the decisions; write nothing."),
    json: bool = JsonOption,
) -> None:
    """Automatic extraction over the latest turns of a transcript (cue-gated, reconciled).

    A transcript larger than 8 MiB is refused (exit 6): pass the latest turns only.
    """
    from ..memory.extraction import Extractor, parse_transcript

    state = state_of(ctx, json)
    memory = state.session().memory
    messages, problems = parse_transcript(_transcript_lines(transcript))
    output.report_warnings(problems)
    result = Extractor(memory, warnings=state.warnings).run(messages, dry_run=dry_run, source=transcript)
    state.report_warnings()
    text = memory_output.decisions_text(result.decisions) + (
        "\n(dry run: nothing written)" if dry_run else ""
    )
    render(state.json, result.to_json, lambda: text, lambda: output.emit_text(text))


def _transcript_lines(transcript: str) -> list[str]:
    """The transcript's lines, read in a bounded way: at most TRANSCRIPT_LIMIT + 1 bytes, so a
    huge file, /dev/zero or an endless pipe is refused instead of filling memory."""
    source = "standard input" if transcript == "-" else f"transcript {transcript}"
    too_large = InvalidInput(f"{source} is larger than 8 MiB: pass only the latest turns")
    try:
        if transcript == "-":
            data = sys.stdin.buffer.read(TRANSCRIPT_LIMIT + 1)
        else:
            with open(transcript, "rb") as handle:
                if os.fstat(handle.fileno()).st_size > TRANSCRIPT_LIMIT:  # a regular file: known at once
                    raise too_large
                data = handle.read(TRANSCRIPT_LIMIT + 1)
    except FileNotFoundError:
        raise NotFound(f"{source} not found") from None
    except IsADirectoryError:
        raise InvalidInput(f"{source} is a folder") from None
    if len(data) > TRANSCRIPT_LIMIT:
        raise too_large
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{source} is not UTF-8 text") from None
    return text.split("\n")
