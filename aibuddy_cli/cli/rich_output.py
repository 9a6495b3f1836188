"""Rich rendering for people at a terminal. Imported only when stdout is a TTY."""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table

from ..memory.records import MemoryRecord
from ..memory.service import Manifest, RecallResult, RecordList

console = Console()


def show_list(result: RecordList) -> None:
    table = Table(title=f"{len(result.records)} memory record(s)")
    for column in ("name", "type", "provenance", "updated", "recalls", "description"):
        table.add_column(column, overflow="fold")
    for item in result.records:
        r = item.record
        table.add_row(r.name, r.type, r.provenance, r.updated or "-", str(r.recall_count), r.description)
    console.print(table)


def show_manifest(manifest: Manifest) -> None:
    table = Table(title=f"recall manifest: {len(manifest.lines)} line(s)")
    for column in ("type", "file", "modified", "description", "why"):
        table.add_column(column, overflow="fold")
    for line in manifest.lines:
        table.add_row(
            line.type, line.filename, line.modified, line.description, "match" if line.matched else "recent"
        )
    console.print(table)


def show_record(record: MemoryRecord) -> None:
    meta = (
        f"[bold]{record.name}[/] [{record.type}] · {record.provenance} · "
        f"created {record.created or '-'} · updated {record.updated or '-'} · "
        f"recalled {record.recall_count}× (last {record.last_recalled_at or 'never'})"
    )
    console.print(Panel(Markdown(record.body or "_(empty body)_"), title=record.description, subtitle=meta))


def show_recall(result: RecallResult) -> None:
    console.print(f"[dim]recall by {result.method}[/]")
    if not result.records:
        console.print("no relevant memory")
    for record in result.records:
        show_record(record)
