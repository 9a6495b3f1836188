"""Whether the messages an item cites state it: a lexical check (memory.facts.stated, see README
"Consolidation"), after the item's message numbers were found in the chunk (reply.Cited)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...memory.extraction import Decision
from ...memory.facts import stated
from .reply import Cited, Rejected

CONTACT_FIELDS = ("bio", "response_policy", "summary")


def stated_part(
    category: str, item: Cited, texts: Mapping[int, str], known: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[Decision]]:
    """The item's fields as far as its cited messages state them, and notes on parts left out;
    Rejected when they do not state the item. Per category:
    - memory: more than half of the description's content words, and every number or code
      (a term with a digit) of the description and the body, are in the cited messages;
    - contacts: every word of the name is; a bio, response policy or summary whose content words
      are not (more than half) is left out, the contact kept. A summary may also rest on the
      contact's summary the request showed (known: by name), which it folds in;
    - knowledge: a row is kept when its values are stated (more than half of their words, every
      number); the item is dropped when no row is;
    - the summary and the task's plan and status are the model's own synthesis: only the message
      numbers are checked.
    A malformed item passes unchanged: its category's shape check reports it. The log never
    repeats the words that were missing: an invented secret stays out of it.
    """
    fields = item.fields
    sources = [texts[n] for n in dict.fromkeys(item.evidence)]
    cited = ", ".join(map(str, sorted(set(item.evidence))[:10]))
    unstated = f"the cited message(s) {cited} do not state it"
    notes: list[Decision] = []
    if category == "memory":
        description, body = fields.get("description"), fields.get("body")
        if isinstance(description, str):
            support = stated(description, sources, values=body if isinstance(body, str) else "")
            if not support.stated:
                raise Rejected(f"{unstated} ({len(support.missing)} word(s) missing)", item_name(fields))
        return fields, notes
    if category == "contacts":
        name = fields.get("name")
        if not isinstance(name, str):
            return fields, notes
        if not stated(name, sources, whole=True).stated:
            raise Rejected(f"{unstated}: the name is not in them", item_name(fields))
        kept = dict(fields)
        folded = (known or {}).get(" ".join(name.split()))
        for field in CONTACT_FIELDS:
            value = fields.get(field)
            carried = [*sources, folded] if field == "summary" and folded else sources
            if isinstance(value, str) and value.strip() and not stated(value, carried).stated:
                del kept[field]
                notes.append(Decision("contacts", "dropped", f"{field}: {unstated}", item_name(fields)))
        return kept, notes
    rows = fields.get("rows")
    if category == "knowledge" and isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
        told = [row for row in rows if stated(_row_text(row), sources).stated]
        if rows and not told:
            raise Rejected(f"{unstated}: none of its {len(rows)} row(s)", item_name(fields))
        if len(told) < len(rows):
            left_out = f"{len(rows) - len(told)} row(s): {unstated}"
            notes.append(Decision("knowledge", "dropped", left_out, item_name(fields)))
        return {**fields, "rows": told}, notes
    return fields, notes


def _row_text(row: Mapping[str, Any]) -> str:
    values = (v for v in row.values() if isinstance(v, str | int | float) and not isinstance(v, bool))
    return " ".join(map(str, values))


def item_name(item: Any) -> str | None:
    """A name or table to show with a dropped item's decision (bounded, printable), if it has one."""
    if not isinstance(item, dict):
        return None
    name = item.get("name", item.get("table"))
    return name[:64] if isinstance(name, str) and name.isprintable() and name.strip() else None
