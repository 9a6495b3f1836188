"""A model's reply, read leniently and validated strictly, into typed items.

`Reply.from_reply` finds the reply's JSON object (a reply without one fails the pass) and gives
each category's items: the first MAX_ITEMS objects of a list category (anything else skipped),
the one object of `tasks`, the summary as it is. Each item is then read in two steps, in this
order, each raising `Rejected` with the one reason the item is dropped:

- `Cited.from_reply`: an object whose strings can be stored and that names message numbers of
  the chunk as its evidence (the same for every category, the summary included);
- after the shield and the check of what the cited messages state (evidence.py), the category's
  own shape, at its handler: `ContactItem`, `KnowledgeItem`, `TaskItem`, `SummaryItem`
  (`MemoryItem` is checked by extraction's reconcile, which reports a malformed record itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ...memory.extraction import Decision
from ...redaction.detect import find
from ..service import WORK_STATUSES

MAX_ITEMS = 50  # items of one category one reply may carry; the rest are dropped
MAX_CONTACT_NAME = 200
LISTS = ("memory", "contacts", "knowledge")  # categories whose reply is a list of items
KEYS = {"summaries": "summary"}  # a category's key in the reply, where it is not its name


class Rejected(Exception):
    """An item that is dropped: why (the decision's detail), and the name to show with it."""

    def __init__(self, detail: str, name: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.name = name

    def decision(self, category: str) -> Decision:
        return Decision(category, "dropped", self.detail, self.name)


class Reply(NamedTuple):
    raw: Mapping[str, Any]

    @classmethod
    def from_reply(cls, text: str) -> Reply:
        """The reply's JSON object, found leniently; ModelError when there is none (the pass fails)."""
        from ...models.calls import parse_json_object

        return cls(parse_json_object(text))

    @property
    def answered(self) -> str:
        """The keys the model answered with, for the log (bounded)."""
        return ", ".join(sorted(k for k in self.raw if isinstance(k, str)))[:200]

    def gave(self, category: str) -> bool:
        return KEYS.get(category, category) in self.raw

    def items(self, category: str) -> list[Any]:
        """The items of a category: the objects of a list (at most MAX_ITEMS), the one of `tasks`."""
        value = self.raw.get(category)
        if category not in LISTS:
            return [value] if isinstance(value, dict) else []
        if not isinstance(value, list):
            return []
        return [item for item in value[:MAX_ITEMS] if isinstance(item, dict)]

    @property
    def summary(self) -> Any:
        """The summary as the reply gives it (Cited.from_reply says what is wrong with it)."""
        return self.raw.get("summary")


class Cited(NamedTuple):
    """An item whose strings can be stored, resting on messages of the chunk."""

    fields: dict[str, Any]
    evidence: tuple[int, ...]

    @classmethod
    def from_reply(cls, value: Any, numbers: set[int]) -> Cited:
        problem = not_text(value)
        if problem is not None:  # nothing could store it: logged by its name, made printable
            raise Rejected(problem, _named(value))
        if not isinstance(value, dict):
            raise Rejected("not an object")
        evidence = value.get("evidence")
        if not isinstance(evidence, list) or not evidence:
            raise Rejected("no evidence: an item must name the messages it rests on")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in evidence):
            raise Rejected("evidence must be message numbers")
        outside = sorted(set(evidence) - numbers)
        if outside:
            raise Rejected(f"evidence outside the chunk: message(s) {', '.join(map(str, outside[:10]))}")
        return cls(value, tuple(evidence))


def not_text(value: Any) -> str | None:
    """Why a model's item cannot be kept as text (a lone surrogate in a string), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "not valid text: a lone surrogate in a string"
        return None
    parts = [*value, *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else []
    for part in parts:
        if (found := not_text(part)) is not None:
            return found
    return None


def _named(value: Any) -> str | None:
    """The name an item is logged by (a record's or contact's name, else its table), its lone
    surrogates as U+FFFD."""
    from ...text import printable

    if not isinstance(value, dict):
        return None
    name = next((value[key] for key in ("name", "table") if isinstance(value.get(key), str)), None)
    return None if name is None else printable(" ".join(name.split()))


def _text(value: Any) -> str | None:
    """A string that holds more than white space, its runs of white space made one space."""
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


class MemoryItem(NamedTuple):
    name: str | None  # for the shield; reconcile validates the whole record
    fields: dict[str, Any]

    @classmethod
    def from_reply(cls, fields: dict[str, Any]) -> MemoryItem:
        name = fields.get("name")
        return cls(name if isinstance(name, str) else None, fields)

    def candidate(self) -> dict[str, Any]:
        """As a candidate of extraction: stated in the chunk, so salient, durable, not recoverable."""
        return {"salience": 1.0, "durable": True, "recoverable": False, **self.fields}


class ContactItem(NamedTuple):
    name: str  # white space made single spaces
    bio: str | None
    response_policy: str | None
    summary: str | None = None

    @classmethod
    def from_reply(cls, fields: dict[str, Any]) -> ContactItem:
        name = fields.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_CONTACT_NAME:
            raise Rejected("a contact needs a name")
        name = " ".join(name.split())
        if find(name):
            raise Rejected("the name looks like a credential")
        bio, policy, summary = (_text(fields.get(field)) for field in ("bio", "response_policy", "summary"))
        return cls(name, bio, policy, summary)


class KnowledgeItem(NamedTuple):
    table: str
    rows: list[dict[str, Any]]

    @classmethod
    def from_reply(cls, fields: dict[str, Any]) -> KnowledgeItem:
        table, rows = fields.get("table"), fields.get("rows")
        if not (isinstance(table, str) and isinstance(rows, list) and all(isinstance(r, dict) for r in rows)):
            raise Rejected("a knowledge item needs a table and rows")
        return cls(table, rows)


class TaskItem(NamedTuple):
    plan: str | None  # stripped
    status: str | None  # open | blocked | done: a pass never closes a task (`task end` does)

    @classmethod
    def from_reply(cls, fields: dict[str, Any]) -> TaskItem:
        plan, status = fields.get("plan"), fields.get("status")
        item = cls(
            plan.strip() if isinstance(plan, str) and plan.strip() else None,
            status if status in WORK_STATUSES else None,
        )
        if item.plan is None and item.status is None:
            raise Rejected("neither a plan nor a status")
        return item


class SummaryItem(NamedTuple):
    text: str | None  # None: no text to roll forward (the summary stays as it was)

    @classmethod
    def from_reply(cls, fields: dict[str, Any]) -> SummaryItem:
        text = fields.get("text")
        return cls(text if isinstance(text, str) and text.strip() else None)
