"""The recall manifest: one line per record (type, filename, modified date, description).

At most `window` lines. Up to `lexical_share` of them are the best lexical matches for the query
over all of the user's records, so an old but relevant record is never hidden by newer ones; the
rest are the most recent records. Recency and the date shown are the record's own header dates
(the later of `updated` and `lastRecalledAt`, see index.recency_ns), so a clone of the vault,
whose files all carry the checkout time, shows the same window.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import NamedTuple, TypedDict

from ..vault import RecallSettings
from .index import IndexedRecord, MemoryIndex

DESCRIPTION_CHARS = 200
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class ManifestLineJson(TypedDict):
    type: str
    filename: str
    modified: str  # the date, YYYY-MM-DD
    description: str
    matched: bool


class ManifestLine(NamedTuple):
    name: str
    type: str
    description: str
    recency_ns: int  # when the record was last updated or recalled (header dates, else mtime)
    matched: bool  # taken in for its lexical match, not its recency

    @property
    def filename(self) -> str:
        return f"{self.name}.md"

    @property
    def modified(self) -> str:
        try:
            moment = _EPOCH + dt.timedelta(microseconds=self.recency_ns // 1000)
        except OverflowError:  # an mtime past the year 9999
            return "9999-12-31" if self.recency_ns > 0 else "0001-01-01"
        return moment.date().isoformat()

    def render(self) -> str:
        description = self.description
        if len(description) > DESCRIPTION_CHARS:
            description = description[: DESCRIPTION_CHARS - 1] + "…"
        return f"[{self.type}] {self.filename} ({self.modified}) {description}"

    def to_json(self) -> ManifestLineJson:
        return {
            "type": self.type,
            "filename": self.filename,
            "modified": self.modified,
            "description": self.description,
            "matched": self.matched,
        }


def _line(item: IndexedRecord, matched: bool) -> ManifestLine:
    record = item.record
    return ManifestLine(record.name, record.type, record.description, item.recency_ns, matched)


def build_manifest(
    index: MemoryIndex, matched: Sequence[str], settings: RecallSettings
) -> list[ManifestLine]:
    """Newest first: the lexically `matched` names (best first, up to the reserved share) are
    taken in whatever their age; the most recent records fill the rest."""
    lines = {
        item.record.name: _line(item, True) for item in index.by_names(matched[: settings.lexical_share])
    }
    for item in index.recent(settings.window):
        if len(lines) >= settings.window:
            break
        lines.setdefault(item.record.name, _line(item, False))
    return sorted(lines.values(), key=lambda line: (-line.recency_ns, line.name))
