"""`aibuddy kb …`: import, review and publish documents; map, outline, search and read them."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from ..errors import InvalidInput, UsageError
from ..knowledge.documents import split_citation
from ..knowledge.results import (
    BodyChange,
    DocumentInfo,
    DocumentList,
    DocumentOutline,
    ImportReport,
    Reviewed,
    SearchResults,
    SummaryReport,
    TaskMap,
)
from ..knowledge.service import KnowledgeService
from . import kb_output, output
from .context import AppState, state_of, stdin_is_terminal
from .output import render

app = typer.Typer(help="Reviewed knowledge documents, read section by section.", no_args_is_help=True)

JsonOption = typer.Option(False, "--json", help="Print one JSON document on stdout.")
TaskOption = typer.Option(None, "--task", help="Use only the documents attached to this task.")
StatusOption = typer.Option("ready", "--status", help="ready, or pending to review what awaits you.")


def _service(state: AppState) -> KnowledgeService:
    return state.session().knowledge


def _simple(state: AppState, result: Reviewed | BodyChange, message: str) -> None:
    state.report_warnings()
    render(state.json, result.to_json, lambda: message, lambda: output.emit_text(message))


@app.command("import")
def import_(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(..., help="Markdown or UTF-8 text files (folders with --recursive)."),
    scope: str = typer.Option("personal", "--scope", help="system (published by admins) or personal."),
    recursive: bool = typer.Option(False, "--recursive", "-r", help="Import the Markdown files in folders."),
    json: bool = JsonOption,
) -> None:
    """Import documents into pending/ for review. Other formats are refused: convert them first."""
    state = state_of(ctx, json)
    service = _service(state)
    with ExitStack() as stack:
        progress = None
        if sys.stderr.isatty() and (recursive or len(paths) > 1):
            from rich.console import Console
            from rich.progress import Progress

            bar = stack.enter_context(Progress(console=Console(stderr=True), transient=True))
            task = bar.add_task("importing", total=None)

            def progress(number: int, total: int, source: str) -> None:
                bar.update(task, completed=number, total=total, description=Path(source).name[:40])

        outcomes = service.import_paths(paths, scope=scope, recursive=recursive, progress=progress)
    state.report_warnings()
    render(
        state.json,
        ImportReport(outcomes).to_json,
        lambda: kb_output.import_text(outcomes),
        lambda: output.emit_text(kb_output.import_text(outcomes)),
    )
    failed = [o for o in outcomes if o.status == "failed"]
    if state.json:
        for outcome in failed:
            output.warn(f"not imported: {outcome.source}: {outcome.message}")
    if failed:
        raise typer.Exit(InvalidInput.exit_code)


@app.command("list")
def list_(
    ctx: typer.Context,
    status: str = typer.Option("all", "--status", help="pending, ready or all."),
    json: bool = JsonOption,
) -> None:
    """Documents you may see: system documents and your personal ones."""
    state = state_of(ctx, json)
    service = _service(state)
    docs = service.documents(status)
    state.report_warnings()

    def rich() -> None:
        from . import rich_output

        rich_output.show_docs(docs)

    render(
        state.json,
        DocumentList(service.user, docs).to_json,
        lambda: kb_output.docs_text(docs),
        rich,
    )


@app.command()
def show(
    ctx: typer.Context,
    doc: str = typer.Argument(..., help="ID, system/ID or personal/ID."),
    json: bool = JsonOption,
) -> None:
    """A document's sidecar: title, owner, scope, status, sha256, outline, summary."""
    state = state_of(ctx, json)
    service = _service(state)
    ref, meta = service.show(doc)
    state.report_warnings()
    text = kb_output.outline_text(ref, meta)
    render(state.json, DocumentInfo(ref, meta).to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def outline(
    ctx: typer.Context,
    doc: str = typer.Argument(..., help="ID, system/ID or personal/ID."),
    task: str | None = TaskOption,
    status: str = StatusOption,
    json: bool = JsonOption,
) -> None:
    """read_doc: the outline (level, title, anchor, lines, size) of a usable document."""
    state = state_of(ctx, json)
    service = _service(state)
    ref, meta = service.outline(doc, task, status)
    state.report_warnings()
    text = kb_output.outline_text(ref, meta)
    render(
        state.json,
        DocumentOutline(ref, meta).to_json,
        lambda: text,
        lambda: output.emit_text(text),
    )


@app.command()
def publish(
    ctx: typer.Context,
    docs: list[str] = typer.Argument(..., help="Documents to publish."),
    json: bool = JsonOption,
) -> None:
    """pending → ready. System documents: admins only; personal ones: their owner."""
    state = state_of(ctx, json)
    service = _service(state)
    reviewed = Reviewed("published", service.publish(*docs))
    _simple(state, reviewed, "\n".join(f"published {name}" for name in reviewed.names))


@app.command()
def reject(
    ctx: typer.Context,
    docs: list[str] = typer.Argument(..., help="Pending documents to reject."),
    json: bool = JsonOption,
) -> None:
    """Remove pending documents from the vault (their source files are not touched)."""
    state = state_of(ctx, json)
    service = _service(state)
    reviewed = Reviewed("rejected", service.reject(*docs))
    _simple(state, reviewed, "\n".join(f"rejected {name}" for name in reviewed.names))


@app.command()
def reingest(
    ctx: typer.Context,
    doc: str = typer.Argument(...),
    path: str | None = typer.Argument(None, help="Read from here instead of the original source."),
    json: bool = JsonOption,
) -> None:
    """Read a document again: new outline, summary cleared, back to pending for review."""
    state = state_of(ctx, json)
    service = _service(state)
    ref, changed = service.reingest(doc, path)
    message = f"{ref.qualified} re-ingested: pending review" if changed else f"{ref.qualified} unchanged"
    _simple(state, BodyChange(ref, changed), message)


@app.command()
def edit(ctx: typer.Context, doc: str = typer.Argument(...), json: bool = JsonOption) -> None:
    """Edit a document's body in $EDITOR; a change sends it back to pending for review."""
    state = state_of(ctx, json)
    service = _service(state)
    ref, body = service.body(doc)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        if not stdin_is_terminal():
            raise UsageError("set EDITOR to edit a document")
        editor = "vi"
    with tempfile.TemporaryDirectory(prefix="aibuddy-edit-") as folder:
        draft = Path(folder) / f"{ref.doc_id}.md"
        draft.write_bytes(body)
        if subprocess.run([*shlex.split(editor), str(draft)]).returncode != 0:
            raise UsageError("the editor failed; nothing changed")
        edited = draft.read_bytes()
    ref, changed = service.replace_body(ref.qualified, edited) if edited != body else (ref, False)
    message = f"{ref.qualified} edited: pending review" if changed else f"{ref.qualified} unchanged"
    _simple(state, BodyChange(ref, changed), message)


@app.command()
def summarize(
    ctx: typer.Context,
    docs: list[str] = typer.Argument(...),
    background: bool = typer.Option(False, "--background", hidden=True),  # started by import
    json: bool = JsonOption,
) -> None:
    """Summaries through the summary model role; a failure leaves documents as they were."""
    state = state_of(ctx, json)
    service = _service(state)
    if background:
        service.summarize_in_background(docs)
        return
    results = service.summarize(docs)
    state.report_warnings()
    text = "\n".join(
        f"{r.doc}: {r.summary}" if r.summarized else f"{r.doc}: not summarized ({r.reason})" for r in results
    )
    render(
        state.json,
        SummaryReport(results).to_json,
        lambda: text,
        lambda: output.emit_text(text),
    )


@app.command("map")
def map_(
    ctx: typer.Context, task: str = typer.Option(..., "--task", help="The task."), json: bool = JsonOption
) -> None:
    """The document map of a task: title, scope, summary and section count of each usable document."""
    state = state_of(ctx, json)
    service = _service(state)
    entries, unavailable = service.map(task)
    state.report_warnings()
    text = kb_output.map_text(entries, unavailable)
    render(
        state.json,
        TaskMap(task, entries, unavailable).to_json,
        lambda: text,
        lambda: output.emit_text(text),
    )


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help='Words, CJK text, "quoted phrases".'),
    task: str | None = TaskOption,
    limit: int = typer.Option(10, "--limit", "-n", min=1, max=1000, help="At most this many hits."),
    status: str = StatusOption,
    json: bool = JsonOption,
) -> None:
    """search_docs: ranked section hits (one per section) with their best line."""
    state = state_of(ctx, json)
    service = _service(state)
    hits = service.search(query, task=task, limit=limit, status=status)
    state.report_warnings()
    text = kb_output.hits_text(hits)
    render(
        state.json,
        SearchResults(query, task, hits).to_json,
        lambda: text,
        lambda: output.emit_text(text),
    )


class _ReadCommand(TyperCommand):
    """`kb read`: a word that begins with one '-' is an argument, not an unknown option, so an anchor
    such as `-operator` (the slug of "`?` operator") needs no `--`. Words with `--` stay options,
    so `--bogus` is still a usage error; the fast path parses the same way."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _dashed_words_last(self.get_params(ctx), args))


def _dashed_words_last(params: Sequence[Any], args: list[str]) -> list[str]:
    """args with its arguments moved after a `--` when one of them begins with '-'. params are the
    command's (Typer's own copy of click's) parameters, read by duck typing."""
    spelled = [(p, [*p.opts, *p.secondary_opts]) for p in params if p.param_type_name == "option"]
    known = {name for _, names in spelled for name in names}
    takes_value = {name for param, names in spelled if not param.is_flag for name in names}
    options: list[str] = []
    words: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            words.extend(args[index + 1 :])
            break
        if arg.startswith("--") or arg in known:
            options.append(arg)
            if arg in takes_value and index + 1 < len(args):
                index += 1
                options.append(args[index])
        else:
            words.append(arg)
        index += 1
    return [*options, "--", *words] if any(word.startswith("-") for word in words) else args


@app.command(cls=_ReadCommand)
def read(
    ctx: typer.Context,
    doc: str = typer.Argument(
        ..., help="ID, system/ID or personal/ID; or a citation DOC#ANCHOR, as search and read print it."
    ),
    anchor: str | None = typer.Argument(
        None, help="The section anchor (see kb outline); may begin with '-'. Omit it for DOC#ANCHOR."
    ),
    cursor: str | None = typer.Option(None, "--cursor", help="Continue where the previous page ended."),
    max_chars: int | None = typer.Option(
        None, "--max-chars", min=1, help="Page size (default [knowledge] page_chars)."
    ),
    task: str | None = TaskOption,
    status: str = StatusOption,
    json: bool = JsonOption,
) -> None:
    """read_section: one bounded page of a section, its child sections and a cursor for more.

    Name the section as DOC ANCHOR or as one citation DOC#ANCHOR (e.g. system/guide#install).
    """
    if anchor is None:
        citation = split_citation(doc)
        if citation is None:
            ctx.fail("Missing argument 'ANCHOR': give DOC ANCHOR, or one citation DOC#ANCHOR as printed.")
        doc, anchor = citation
    elif split_citation(doc) is not None:
        ctx.fail(f"{doc!r} is a citation already: give DOC ANCHOR or DOC#ANCHOR.")
    state = state_of(ctx, json)
    service = _service(state)
    section_page = service.read(doc, anchor, cursor=cursor, max_chars=max_chars, task=task, status=status)
    state.report_warnings()
    text = kb_output.page_text(section_page)
    render(state.json, section_page.to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def watch(
    ctx: typer.Context,
    debounce: float = typer.Option(0.5, "--debounce", min=0.05, help="Seconds of quiet before acting."),
) -> None:
    """Keep sidecars, review status and the search index current while files change (Ctrl-C stops)."""
    from ..knowledge.watch import watch_vault, watched_folders

    state = state_of(ctx)
    service = _service(state)

    def report(messages: list[str]) -> None:
        for message in messages:
            print(message, file=sys.stderr, flush=True)

    folders = " and ".join(str(folder) for folder in watched_folders(service))
    print(f"watching {folders} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    watch_vault(service, debounce=debounce, report=report)


@app.command()
def ask(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="What you want to know from the task's documents."),
    task: str = typer.Option(..., "--task", help="Answer from the documents attached to this task."),
    json: bool = JsonOption,
) -> None:
    """Knowledge subagent: an answer with checked citations and gaps (excerpts without a model)."""
    from ..knowledge.ask import KnowledgeAgent

    state = state_of(ctx, json)
    service = _service(state)
    result = KnowledgeAgent(service, task).ask(question)
    state.report_warnings()
    lines = [result.answer, ""]
    lines += [f"[{c.doc}#{c.anchor}] {c.title} (lines {c.lines[0]}-{c.lines[1]})" for c in result.citations]
    lines += [f"gap: {gap}" for gap in result.gaps]
    text = "\n".join(lines)
    render(state.json, result.to_json, lambda: text, lambda: output.emit_text(text))
