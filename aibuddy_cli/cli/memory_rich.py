"""Rich renderings of memory results that say more than `rich_output`'s: the expiry of a record,
the review's proposals. Imported only when stdout is a terminal."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ..memory.records import MemoryRecord
from ..memory.review import Review
from ..memory.service import RecordList
from . import rich_output
from .output import one_line
from .rich_output import console


def _field(value: object) -> str:
    return escape(one_line(value))


def _expiry(record: MemoryRecord) -> str:
    if record.expires is None:
        return ""
    expired = record.to_json(body=False).get("expired")
    return f"expired {record.expires}" if expired else f"until {record.expires}"


def show_list(result: RecordList) -> None:
    """`memory list`: a table, with an expiry column when a record has one."""
    dated = any(item.record.expires for item in result.records)
    title = "expired memory record(s)" if result.only_expired else "memory record(s)"
    shown = len(result.records)
    heading = f"{shown} {title}"
    if result.more:
        heading = f"the newest {shown} of {shown + result.more:,} {title}"
    table = Table(title=heading)
    columns = ["name", "type", "provenance", "updated", "recalls", "description"]
    for column in [*columns, *(["expires"] if dated else [])]:
        table.add_column(column, overflow="fold")
    for item in result.records:
        r = item.record
        row = [r.name, r.type, r.provenance, r.updated or "-", r.recall_count, r.description]
        table.add_row(*(_field(value) for value in [*row, *([_expiry(r)] if dated else [])]))
    console.print(table)


def show_record(record: MemoryRecord) -> None:
    """`memory show`: rich_output's panel, and the expiry when the record has one."""
    rich_output.show_record(record)
    if record.expires is not None:
        console.print(f"[yellow]{_field(_expiry(record))}[/]: out of recall from that day on")


def show_review(review: Review) -> None:
    for applied in review.applied:
        style = "green" if applied.outcome == "applied" else "yellow"
        console.print(f"[{style}]{_field(applied.outcome)}[/] {_field(applied.id)}: {_field(applied.detail)}")
    if not review.proposals:
        console.print("nothing to review")
        return
    table = Table(title=f"{len(review.proposals)} proposal(s) (unused: {review.unused_days} days)")
    for column in ("id", "action", "records", "why"):
        table.add_column(column, overflow="fold")
    for p in review.proposals:
        table.add_row(*(_field(v) for v in (p.id, f"{p.action} ({p.kind})", ", ".join(p.records), p.reason)))
    console.print(table)
