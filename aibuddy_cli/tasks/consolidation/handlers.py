"""The category handlers: each applies one checked item of a reply (or, on a dry run, says what
it would do) and answers with its decision. memory → extraction's reconcile; contacts → the
personal `contacts` table, merged by name; knowledge → rows of existing tables; tasks → the task's
plan and status; the summary → the text the watermark keeps."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import AibuddyError, NotFound
from ...memory.extraction import Decision, Extractor, bounded
from ...redaction import redacted_noted
from ..service import TaskService
from .reply import ContactItem, KnowledgeItem, MemoryItem, Rejected, SummaryItem, TaskItem
from .shield import CONTACTS, Shield

if TYPE_CHECKING:
    from ...tables.changes import TableChanges
    from ...tables.queries import TableQueries
    from ...tables.service import TableService

SOURCE = "consolidation"  # how the tables journal names the changes of a pass
MAX_FIELD = 2000  # characters of a contact's bio or response policy
MAX_PLAN = 4000
MAX_SUMMARY = 4000
CONTACT_COLUMNS = (("bio", "bio", "bios"), ("response_policy", "response_policy", "response_policies"))


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
    ) -> None:
        """tables: where contacts and knowledge go (None when both are switched off)."""
        self.task_id = task_id
        self.tasks = tasks
        self.reconciler = reconciler
        self._tables = tables
        self.shield = shield
        self.flags = flags
        self.dry_run = dry_run

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
        item = ContactItem.from_reply(fields)
        name, dry_run = item.name, self.dry_run
        if self.shield.rows_named(CONTACTS, name):
            return Decision("contacts", "handled", "the chunk's own tool call wrote it", name)
        given = item._asdict()
        values = {
            column: given[field]
            for field, column, flag in CONTACT_COLUMNS
            if self.flags[flag] and given[field] is not None
        }
        values, note = redacted_noted(values)  # before the cut, which could hide a key's shape
        values = {column: text[:MAX_FIELD] for column, text in values.items()}
        changes = self.tables.changes
        try:
            existing = self.tables.queries.filter([CONTACTS], _named(name), limit=1).tables[0]
        except NotFound:
            if dry_run:
                made = "new contact (and the contacts table)"
                return Decision("contacts", "would-create", made + note, name)
            changes.create(CONTACTS, "People the user's conversations mention", columns=_contact_columns())
            existing = None
        if existing is None or existing.total == 0:
            if dry_run:
                return Decision("contacts", "would-create", "new contact" + note, name)
            changes.add_rows(CONTACTS, [{"name": name, **values}])
            return Decision("contacts", "created", "new contact" + note, name)
        row = existing.rows[0]
        new = {column: value for column, value in values.items() if row.get(column) != value}
        if not new:
            return Decision("contacts", "no-op", "nothing new", name)
        if dry_run:
            return Decision("contacts", "would-update", ", ".join(new) + note, name)
        changes.update_rows(CONTACTS, _named(name), new)
        return Decision("contacts", "updated", ", ".join(new) + note, name)

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
        item = TaskItem.from_reply(fields)
        plan, note = redacted_noted(item.plan)  # before the cut, which could hide a key's shape
        plan = plan[:MAX_PLAN] if plan is not None else None
        if self.dry_run:
            return Decision("tasks", "would-update", ("plan" if plan else f"status {item.status}") + note)
        self.tasks.set_plan(self.task_id, plan, item.status)
        done = ", ".join(part for part, value in (("plan", plan), ("status", item.status)) if value)
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


def _named(name: str) -> str:
    return f"name == {json.dumps(name)}"


def _contact_columns() -> list[Any]:
    from ...tables.schema import ColumnSpec

    return [
        ColumnSpec("name", "str", "who"),
        ColumnSpec("bio", "str", "who they are, as the conversations say"),
        ColumnSpec("response_policy", "str", "how the user wants them answered"),
    ]
