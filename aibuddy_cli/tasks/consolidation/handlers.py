"""The category handlers: each applies one checked item of a reply (or, on a dry run, says what
it would do) and answers with its decision. memory → extraction's reconcile; contacts → the
personal `contacts` table, merged by name; knowledge → rows of existing tables; tasks → the task's
plan and status; the summary → the text the watermark keeps."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import AibuddyError, Busy, DiskFull, NotFound, ReadOnly
from ...memory.extraction import Decision, Extractor, bounded
from ...memory.pending import Pending
from ...redaction.detect import redacted_noted
from ..service import Task, TaskService
from .reply import ContactItem, KnowledgeItem, MemoryItem, Rejected, SummaryItem, TaskItem
from .shield import CONTACTS, Shield

if TYPE_CHECKING:
    from ...tables.changes import TableChanges
    from ...tables.queries import TableQueries
    from ...tables.service import TableService

SOURCE = "consolidation"  # how the tables journal names the changes of a pass
MAX_FIELD = 2000  # characters of a contact's bio, response policy or summary
MAX_PLAN = 4000
# What a write meets that says nothing about the item: the vault is busy, full or read-only now.
TRANSIENT = (Busy, DiskFull, ReadOnly)


def transient(error: AibuddyError) -> bool:
    """Whether a write's error is the vault's, not the item's: TRANSIENT, or a file the file
    system refused (the table journal: "nothing changed"), which a later pass may write."""
    return isinstance(error, TRANSIENT) or isinstance(error.__cause__, OSError)

MAX_SUMMARY = 4000
# (the reply's field, the contacts table's column, the [consolidation] flag that switches it)
CONTACT_COLUMNS = (
    ("bio", "bio", "bios"),
    ("response_policy", "response_policy", "response_policies"),
    ("summary", "summary", "contact_summaries"),
)
COLUMN_HELP = {
    "name": "who",
    "bio": "who they are, as the conversations say",
    "response_policy": "how the user wants them answered",
    "summary": "what the conversations say about them, rolled forward pass by pass",
}
MAX_KNOWN = 20  # contacts whose summary one request shows
MAX_SCANNED = 10_000  # contacts read to find the ones a chunk names


class Tables(NamedTuple):
    """The tables as a pass reads and changes them."""

    queries: TableQueries
    changes: TableChanges


def consolidation_tables(service: TableService) -> Tables:
    """The service's tables over a state of their own, derived from the service's (as
    `TableService.read_only` derives one) and journaled as source "consolidation": the service's
    own state is never changed, so nothing else using it meanwhile is journaled as the pass."""
    from ...tables.changes import TableChanges
    from ...tables.queries import TableQueries

    own = service.state
    state = own.derive(own.store, run=own.run, source=SOURCE)
    return Tables(TableQueries(state), TableChanges(state))


class Handlers:
    """The category handlers of one pass over one chunk."""

    def __init__(
        self,
        task_id: str,
        tasks: TaskService,
        reconciler: Extractor,
        tables: Tables | None,
        shield: Shield,
        flags: Mapping[str, bool],
        dry_run: bool,
        known: Mapping[str, str] | None = None,
        shown: Task | None = None,
    ) -> None:
        """tables: where contacts and knowledge go (None when both are switched off). flags: the
        categories and parts of contacts the pass asked for. known: the contacts' summaries the
        request showed the model (by name), which their new summary folds in. shown: the task as
        the request showed it (its plan and status: a person's change since is kept)."""
        self.task_id = task_id
        self.tasks = tasks
        self.reconciler = reconciler
        self._tables = tables
        self.shield = shield
        self.flags = flags
        self.dry_run = dry_run
        self.known: Mapping[str, str] = known or {}
        self.shown = shown

    def apply(self, category: str, fields: dict[str, Any]) -> Decision:
        """One item of the category (memory, contacts, knowledge, tasks): what was done with it."""
        handler = {
            "memory": self.memory,
            "contacts": self.contact,
            "knowledge": self.knowledge,
            "tasks": self.task,
        }[category]
        try:
            return handler(fields)
        except Rejected as exc:
            return exc.decision(category)
        except AibuddyError as exc:
            if transient(exc):
                raise  # the vault cannot be written now: the pass is tried again, its position kept
            return Decision(category, "failed", bounded(exc.message))

    @property
    def tables(self) -> Tables:
        if self._tables is None:
            raise RuntimeError("a table category ran with both table categories switched off")
        return self._tables

    def memory(self, fields: dict[str, Any]) -> Decision:
        item = MemoryItem.from_reply(fields)
        if item.name is not None and item.name in self.shield.memory_deleted:
            return Decision("memory", "dropped", "the chunk deleted this record", item.name)
        if item.name is not None and item.name in self.shield.memory_written:
            return Decision("memory", "handled", "the chunk's own tool call wrote it", item.name)
        return self.reconciler.reconcile(item.candidate(), self.dry_run)._replace(step="memory")

    def contact(self, fields: dict[str, Any]) -> Decision:
        """A person, merged by name into the personal `contacts` table (never a team's: the
        table is named without a folder). A summary the model made without being shown the
        contact's own is added to it, not put in its place. A contacts table that lacks one of
        the columns gains it, its rows kept."""
        item = ContactItem.from_reply(fields)
        # The row the request showed, as it is spelled there ("maria lopez" for "Maria Lopez").
        shown_as = {name.casefold(): name for name in self.known}
        name, dry_run = shown_as.get(" ".join(item.name.split()).casefold(), item.name), self.dry_run
        if self.shield.rows_named(CONTACTS, name):
            return Decision("contacts", "handled", "the chunk's own tool call wrote it", name)
        given = item._asdict()
        values = {
            column: given[field]
            for field, column, flag in CONTACT_COLUMNS
            if self.flags[flag] and given[field] is not None
        }
        values, note = redacted_noted(values)  # before the cut, which could hide a key's shape
        try:
            columns = set(self.tables.queries.show(CONTACTS).schema.types)
        except NotFound:
            if dry_run:
                made = "new contact (and the contacts table)"
                return Decision("contacts", "would-create", made + note, name)
            columns = set(COLUMN_HELP)  # (write_contact makes the table: a proposal makes nothing)
        row = contact_row(self.tables, name)
        previous = row.get("summary") if row is not None else None
        # A summary the model was not shown (or that a person changed since) is kept, the new after it.
        unseen = name not in self.known or previous != self.known[name]
        values = _bounded(values, previous if unseen and isinstance(previous, str) else None)
        new = values if row is None else {c: v for c, v in values.items() if row.get(c) != v}
        if row is not None and not new:
            return Decision("contacts", "no-op", "nothing new", name)
        added = [column for column in new if column not in columns]
        grown = f" (new column: {', '.join(added)})" if added else ""
        said = ("new contact" if row is None else ", ".join(new)) + grown + note
        if dry_run:
            return Decision("contacts", "would-create" if row is None else "would-update", said, name)
        if self.reconciler.config.review:  # a person accepts it first (memory/pending.py)
            base = None if row is None else {column: row.get(column) for column in new}
            Pending(self.reconciler.memory).propose_contact(name, dict(new), base, reason=said)
            return Decision("contacts", "proposed", said, name)
        outcome = write_contact(self.tables, name, new)
        return Decision("contacts", outcome, said, name)

    def knowledge(self, fields: dict[str, Any]) -> Decision:
        item = KnowledgeItem.from_reply(fields)
        fresh = [row for row in item.rows if not self.shield.row_written(item.table, row)]
        if not fresh:
            return Decision("knowledge", "handled", "the chunk's own tool calls added these rows", item.table)
        fresh, note = redacted_noted(fresh)
        if self.dry_run:
            self.tables.queries.show(item.table)  # a missing or foreign table fails as it would
            return Decision("knowledge", "would-add", f"{len(fresh)} row(s)" + note, item.table)
        added = self.tables.changes.add_rows(item.table, fresh)
        return Decision("knowledge", "added", f"{added.changed['added']} row(s)" + note, item.table)

    def task(self, fields: dict[str, Any]) -> Decision:
        """The task's plan and status (open, blocked or done). A pass never closes a task (that is
        `task end`, which also extracts memory) nor changes a closed task's status."""
        item = TaskItem.from_reply(fields)
        plan, note = redacted_noted(item.plan)  # before the cut, which could hide a key's shape
        plan = plan[:MAX_PLAN] if plan is not None else None
        task = self.tasks.get(self.task_id)
        status = item.status if item.status != task.status else None
        if status is not None and task.status == "closed":
            return Decision("tasks", "dropped", f"the task is closed: its status stays ({status} not set)")
        plan = plan if plan != task.plan else None
        kept: list[str] = []  # what a person changed while the model answered stays theirs
        if self.shown is not None and plan is not None and task.plan != self.shown.plan:
            plan, kept = None, [*kept, "plan"]
        if self.shown is not None and status is not None and task.status != self.shown.status:
            status, kept = None, [*kept, "status"]
        if kept and plan is None and status is None:
            return Decision("tasks", "dropped", f"the {' and '.join(kept)} changed since the request: kept")
        done = ", ".join(part for part, value in (("plan", plan), (f"status {status}", status)) if value)
        if not done:
            return Decision("tasks", "no-op", "nothing new")
        if self.dry_run:
            return Decision("tasks", "would-update", done + note)
        if plan is not None:
            self.tasks.set_plan(self.task_id, plan, status=status)
        elif status is not None:
            self.tasks.set_status(self.task_id, status)
        return Decision("tasks", "updated", done + note)

    def summary(self, fields: dict[str, Any], last: int) -> tuple[str, Decision] | None:
        """The rolling summary the reply brings through message `last`, or None: it has no text."""
        item = SummaryItem.from_reply(fields)
        if item.text is None:
            return None
        # Redacted, then cut: a key cut first could be too short to be seen as one.
        text, note = redacted_noted(item.text)
        outcome = "would-update" if self.dry_run else "updated"
        return bounded_summary(text), Decision("summaries", outcome, f"through message {last}{note}")


def bounded_summary(text: str) -> str:
    from ...text import shorten

    return shorten(" ".join(text.split()), MAX_SUMMARY)


def write_contact(tables: Tables, name: str, values: Mapping[str, Any]) -> str:
    """The contact's row written: added ("created") or its columns set ("updated"); the personal
    `contacts` table made, and a column it lacks added, first. (A pass, and a person accepting a
    pass's proposal, write a contact the same way.)"""
    changes = tables.changes
    try:
        columns = set(tables.queries.show(CONTACTS).schema.types)
    except NotFound:
        changes.create(CONTACTS, "People the user's conversations mention", columns=_contact_columns())
        columns = set(COLUMN_HELP)
    for column in values:
        if column not in columns:
            changes.add_column(CONTACTS, column, "str", COLUMN_HELP.get(column, ""))
    if not tables.queries.filter([CONTACTS], _named(name), limit=1).tables[0].total:
        changes.add_rows(CONTACTS, [{"name": name, **values}])
        return "created"
    changes.update_rows(CONTACTS, _named(name), dict(values))
    return "updated"


def contact_row(tables: Tables, name: str) -> dict[str, Any] | None:
    """The contact's row as it is now (None: no such contact, or no contacts table)."""
    try:
        found = tables.queries.filter([CONTACTS], _named(name), limit=1).tables[0]
    except NotFound:
        return None
    return found.rows[0] if found.total else None


def _named(name: str) -> str:
    return f"name == {json.dumps(name, ensure_ascii=False)}"  # (𠮷 as itself: no surrogate pair)


def _contact_columns() -> list[Any]:
    from ...tables.schema import ColumnSpec

    return [ColumnSpec(column, "str", description) for column, description in COLUMN_HELP.items()]


def _bounded(values: dict[str, str], fold_into: str | None) -> dict[str, str]:
    """A contact's values within MAX_FIELD. fold_into: the contact's summary, which the model was
    not shown: the new summary is added after it, the oldest words dropped past the bound."""
    from ...text import shorten

    bounded = {column: shorten(text, MAX_FIELD) for column, text in values.items() if column != "summary"}
    summary = values.get("summary")
    if summary is not None and fold_into:
        folded = f"{' '.join(fold_into.split())} {summary}"
        if len(folded) > MAX_FIELD:
            tail = folded[len(folded) - MAX_FIELD + 1 :]
            folded = "…" + (tail.split(" ", 1)[1] if " " in tail[:200] else tail)
        bounded["summary"] = folded
    elif summary is not None:
        bounded["summary"] = shorten(summary, MAX_FIELD)
    return bounded


def known_contacts(tables: Tables, texts: list[str]) -> dict[str, str]:
    """The summaries of the contacts the chunk's texts name (every word of the name, in any case),
    at most MAX_KNOWN, by name: shown to the model so that it folds what the chunk says into them.
    Nothing when there is no contacts table, or it cannot be read (the pass goes on without)."""
    chunk = " ".join(texts).casefold()
    known: dict[str, str] = {}
    offset = 0
    try:
        while offset < MAX_SCANNED and len(known) < MAX_KNOWN:
            page = tables.queries.filter([CONTACTS], None, limit=tables.queries.max_rows, offset=offset)
            rows = page.tables[0].rows
            for row in rows:
                name, summary = row.get("name"), row.get("summary")
                if not (isinstance(name, str) and isinstance(summary, str) and summary.strip()):
                    continue
                words = name.casefold().split()
                if words and all(word in chunk for word in words) and len(known) < MAX_KNOWN:
                    known[" ".join(name.split())] = summary
            offset += len(rows)
            if not rows or offset >= page.tables[0].total:
                break
    except AibuddyError:
        return known
    return known
