"""Rich rendering for people at a terminal. Imported only when stdout is a TTY.

Vault content never reaches the terminal as markup or raw control characters: one-line fields go
through `_field` (control characters, newlines and tabs escaped, then Rich markup escaped, so a
description "[link=…]" or "\\x1b]…" is shown as written), bodies through `escape_controls`.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from ..knowledge.index import IndexedDoc
from ..memory.records import MemoryRecord
from ..memory.service import Manifest, RecallResult, RecordList
from .output import escape_controls, one_line

console = Console()


def _field(value: object) -> str:
    return escape(one_line(value))


def show_list(result: RecordList) -> None:
    table = Table(title=f"{len(result.records)} memory record(s)")
    for column in ("name", "type", "provenance", "updated", "recalls", "description"):
        table.add_column(column, overflow="fold")
    for item in result.records:
        r = item.record
        row = (r.name, r.type, r.provenance, r.updated or "-", r.recall_count, r.description)
        table.add_row(*(_field(value) for value in row))
    console.print(table)


def show_manifest(manifest: Manifest) -> None:
    table = Table(title=f"recall manifest: {len(manifest.lines)} line(s)")
    for column in ("type", "file", "modified", "description", "why"):
        table.add_column(column, overflow="fold")
    for line in manifest.lines:
        why = "match" if line.matched else "recent"
        table.add_row(*(_field(v) for v in (line.type, line.filename, line.modified, line.description, why)))
    console.print(table)


def show_record(record: MemoryRecord) -> None:
    meta = (
        f"[bold]{_field(record.name)}[/] {_field(f'[{record.type}]')} · {_field(record.provenance)} · "
        f"created {_field(record.created or '-')} · updated {_field(record.updated or '-')} · "
        f"recalled {record.recall_count}× (last {_field(record.last_recalled_at or 'never')})"
    )
    body = Markdown(escape_controls(record.body) or "_(empty body)_")
    console.print(Panel(body, title=_field(record.description), subtitle=meta))


def show_recall(result: RecallResult) -> None:
    console.print(f"[dim]recall by {_field(result.method)}[/]")
    if not result.records:
        console.print("no relevant memory")
    for record in result.records:
        show_record(record)


def show_docs(docs: Iterable[IndexedDoc]) -> None:
    """`kb list` on a terminal."""
    docs = list(docs)
    table = Table(title=f"{len(docs)} document(s)")
    for column in ("doc", "status", "sections", "title"):
        table.add_column(column, overflow="fold")
    for d in docs:
        table.add_row(*(_field(v) for v in (d.ref.qualified, d.ref.status, d.section_count, d.title)))
    console.print(table)
