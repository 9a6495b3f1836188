"""`aibuddy kb …`: the knowledge operations (operations/kb.py), and `kb edit` and `kb watch`,
which hand the terminal to an editor or keep running."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from ..errors import UsageError
from ..knowledge.results import BodyChange
from . import kb_output, output
from .commands import add_commands
from .context import state_of, stdin_is_terminal
from .output import render

app = typer.Typer(help="Reviewed knowledge documents, read section by section.", no_args_is_help=True)


class _ReadCommand(TyperCommand):
    """`kb read`: a word that begins with one '-' is an argument, not an unknown option, so an anchor
    such as `-operator` (the slug of "`?` operator") needs no `--`. Words with `--` stay options,
    so `--bogus` is still a usage error; the fast path parses the same way."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _dashed_words_last(self.get_params(ctx), args))


add_commands(app, ("kb",), kb_output.RENDERS, {"kb read": {"cls": _ReadCommand}})


@app.command()
def edit(
    ctx: typer.Context,
    doc: str = typer.Argument(...),
    json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Edit a document's body in $EDITOR; a change sends it back to pending for review."""
    state = state_of(ctx, json)
    service = state.session().knowledge
    ref, body = service.body(doc)
    editor = state.environ.get("VISUAL") or state.environ.get("EDITOR")
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
    state.report_warnings()
    render(state.json, BodyChange(ref, changed).to_json, lambda: message, lambda: output.emit_text(message))


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


@app.command()
def watch(
    ctx: typer.Context,
    debounce: float = typer.Option(0.5, "--debounce", min=0.05, help="Seconds of quiet before acting."),
) -> None:
    """Keep sidecars, review status and the search index current while files change (Ctrl-C stops)."""
    from ..knowledge.watch import watch_vault, watched_folders

    state = state_of(ctx)
    service = state.session().knowledge

    def report(messages: list[str]) -> None:
        for message in messages:
            print(message, file=sys.stderr, flush=True)

    folders = " and ".join(str(folder) for folder in watched_folders(service))
    print(f"watching {folders} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    watch_vault(service, debounce=debounce, report=report)


