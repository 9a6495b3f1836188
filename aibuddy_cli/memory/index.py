"""The derived per-user memory index: record headers and an FTS5 table over name, description, body.

It lives under .aibuddy/ and is only a cache. Each use first compares the folder with what the
index saw (mtime, ctime, size per file) and re-reads what changed, so edits, deletions and a
`git pull` behind the tool's back are picked up; deleting the file loses nothing.

A record's recency (what orders the recall window) comes from its header, the later of `updated`
and `lastRecalledAt`, because header dates travel with git and file mtimes do not: after a
`git clone` every mtime is the checkout time. Only a record without usable dates falls back to
its mtime. A hand edit counts too: when a record's content (anything but the telemetry lines and
`updated`) changed since the index last saw it while `updated` did not, nobody went through
aibuddy, and the edit's moment (the file's mtime, never later than now) is kept as the record's
`touched_ns` and counts as an update. A fresh index (a clone) has seen nothing before: header
dates alone.

A record whose `expires` moment has come (expiry.py) is left out of the window and of every
ranking (`live`); `records()` lists it, and says so, for `memory list --expired` and review.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypedDict

from ..cache_db import CacheDB, entry_hash, files_digest
from ..dates import read_time, text_days
from ..folder_watch import cursor_source
from ..storage import Entry
from ..text import index_text
from . import expiry, lexical
from .records import MemoryRecord
from .semantic import Embedder, mostly_cjk

SCHEMA_VERSION = 8

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cursors (watch TEXT PRIMARY KEY, cursor TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    key TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    recency_ns INTEGER NOT NULL,
    error TEXT,
    description TEXT,
    type TEXT,
    provenance TEXT,
    created TEXT,
    updated TEXT,
    recall_count INTEGER,
    last_recalled_at TEXT,
    expires TEXT,
    expires_ns INTEGER,
    content TEXT,
    touched_ns INTEGER
);
CREATE INDEX IF NOT EXISTS records_by_recency ON records (recency_ns DESC, name);
CREATE INDEX IF NOT EXISTS records_expiring ON records (expires_ns) WHERE expires_ns IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_with_errors ON records (name) WHERE error IS NOT NULL;
CREATE TABLE IF NOT EXISTS record_days (id INTEGER NOT NULL, day TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS record_vectors (id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS record_days_by_day ON record_days (day, id);
CREATE INDEX IF NOT EXISTS record_days_by_id ON record_days (id);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    name, description, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


MEANING_DEPTH = 50  # how deep each ranking goes into the fusion of words and meaning
RRF_K = 60  # reciprocal-rank fusion's usual constant

_LARGEST = (1 << 63) - 1
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _live(table: str = "") -> str:
    """The SQL condition of a record that has not expired by now (an integer the code makes)."""
    column = f"{table}.expires_ns" if table else "expires_ns"
    return f"({column} IS NULL OR {column} > {int(expiry.now_ns())})"


def _clamp(ns: int) -> int:
    """A moment as SQLite can hold it (years 1677 to 2262)."""
    return max(-_LARGEST, min(ns, _LARGEST))


def content_digest(record: MemoryRecord) -> str:
    """What a hand edit changes: every field but the telemetry and `updated` (a digest)."""
    fields = (
        record.description,
        record.type,
        record.provenance,
        record.created,
        record.expires,
        record.body,
        record.extra,
    )
    return hashlib.blake2b(repr(fields).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _stored(entry: Entry) -> tuple[str, int, int, int]:
    """An entry as SQLite can hold it: a timestamp past the year 2262 is clamped to the maximum."""
    return entry.key, min(entry.mtime_ns, _LARGEST), min(entry.ctime_ns, _LARGEST), entry.size


def _header_ns(stamp: str | None) -> int | None:
    """A header timestamp ("2026-09-14T09:12:00Z", as parse_record normalises them) in ns."""
    if not stamp:
        return None
    try:
        moment = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return max(-_LARGEST, min((moment - _EPOCH) // dt.timedelta(microseconds=1) * 1000, _LARGEST))


def record_days(record: MemoryRecord) -> set[dt.date]:
    """The days a record is of: when it was written and last changed (its header), and the days
    its description and body state (a day without its year in the year it was written)."""
    days = set()
    for stamp in (record.created, record.updated):
        if stamp:
            try:
                days.add(dt.date.fromisoformat(stamp[:10]))
            except ValueError:
                continue
    written = min(days).year if days else None
    days.update(text_days(f"{record.description}\n{record.body}", written))
    return days


def recency_ns(record: MemoryRecord, mtime_ns: int) -> int:
    """When the record was last written or recalled, by its header: the later of `updated` and
    `lastRecalledAt` (`created` if it has neither); the file's mtime only without any date."""
    stamps = [ns for ns in map(_header_ns, (record.updated, record.last_recalled_at)) if ns is not None]
    if not stamps:
        created = _header_ns(record.created)
        stamps = [min(mtime_ns, _LARGEST) if created is None else created]
    return max(stamps)


Loaded = tuple[Entry, MemoryRecord | None, str | None] | None
"""What reading one file gave: its entry as read, the record or None, the problem or None;
None when the file vanished before it could be read."""


class IndexedRecord(NamedTuple):
    record: MemoryRecord  # header fields only; body is ""
    recency_ns: int  # see recency_ns(): header dates, else the file's mtime


class ProblemJson(TypedDict):
    name: str
    message: str


class Problem(NamedTuple):
    """A record file that could not be used (malformed, in conflict, unreadable), by name."""

    name: str
    message: str

    def to_json(self) -> ProblemJson:
        return {"name": self.name, "message": self.message}


class MemoryIndex(CacheDB):
    _vectors: tuple[Any, list[str], Any] | None = None  # (marker, names, matrix) of vectors()
    schema = _SCHEMA
    version = SCHEMA_VERSION
    tables = ("meta", "cursors", "records", "record_days", "record_vectors", "records_fts")

    # --- keeping it current -----------------------------------------------------------

    def cursors(self) -> list[str]:
        """The cursors (folder_watch.Changes) the stores' watches gave when each last brought the
        index up to date: several long-lived processes each keep their own."""
        return [str(cursor) for (cursor,) in self.db.execute("SELECT cursor FROM cursors")]

    def _keep_cursor(self, cursor: str | None) -> None:
        if cursor is not None:
            self.db.execute(
                "INSERT OR REPLACE INTO cursors (watch, cursor) VALUES (?, ?)",
                (cursor_source(cursor), cursor),
            )
            # Servers that ended left theirs: keep the latest few.
            self.db.execute(
                "DELETE FROM cursors WHERE rowid NOT IN"
                " (SELECT rowid FROM cursors ORDER BY rowid DESC LIMIT 16)"
            )

    def refresh_changed(
        self, entries: list[Entry | None], names: Iterable[str], load: Callable[[Entry], Loaded], cursor: str
    ) -> None:
        """Bring the rows of the records `names` in line with `entries` (theirs, None where the file
        is gone), the only files changed since the index last saw the folder; then keep cursor."""
        wanted = dict(zip(names, entries, strict=True))
        stored = {
            name: self.db.execute(
                "SELECT mtime_ns, ctime_ns, size FROM records WHERE name = ?", (name,)
            ).fetchone()
            for name in wanted
        }
        changed = [entry for name, entry in wanted.items() if entry and stored[name] != _stored(entry)[1:]]
        removed = [name for name, entry in wanted.items() if entry is None and stored[name] is not None]
        self._apply(changed, removed, [load(entry) for entry in changed], cursor)

    def refresh(
        self, entries: list[Entry], load: Callable[[Entry], Loaded], cursor: str | None = None
    ) -> None:
        """Bring the index in line with the folder listing `entries`; then keep cursor (the
        watch's, when the listing was made after it was given).

        The folder digest (a sum of per-file hashes, kept current by every upsert and delete)
        answers "anything changed?" without reading 10,000 rows; only then are rows compared.
        """
        if files_digest(entries) == self.stored_digest():
            if cursor is not None and cursor not in self.cursors():
                with self.write():
                    self._keep_cursor(cursor)
            return
        current = {entry.name[: -len(".md")]: entry for entry in entries}
        seen = {
            name: (mtime, ctime, size)
            for name, mtime, ctime, size in self.db.execute(
                "SELECT name, mtime_ns, ctime_ns, size FROM records"
            )
        }
        changed = [entry for name, entry in current.items() if seen.get(name) != _stored(entry)[1:]]
        removed = [name for name in seen if name not in current]
        self._apply(changed, removed, [load(entry) for entry in changed], cursor)

    def _apply(
        self, changed: list[Entry], removed: list[str], loaded: list[Loaded], cursor: str | None
    ) -> None:
        with self.write():
            delta = sum(self._delete(name) for name in removed)
            for entry, outcome in zip(changed, loaded, strict=True):
                if outcome is None:
                    delta += self._delete(entry.name[: -len(".md")])
                else:
                    delta += self._upsert(*outcome)
            self._add_to_digest(delta)
            self._keep_cursor(cursor)

    def _add_to_digest(self, delta: int) -> None:
        if delta:
            self.set_digest((self.stored_digest() or 0) + delta)

    def records_written(self, written: Iterable[tuple[Entry, MemoryRecord]]) -> None:
        """Tell the index about writes this process just made, so the next refresh skips them."""
        with self.write():
            self._add_to_digest(sum(self._upsert(entry, record, None) for entry, record in written))

    def recalls_written(self, written: Iterable[tuple[Entry, MemoryRecord, Entry]]) -> None:
        """records_written for recalls: (entry as written, record, entry as read). Where the index
        row describes the very bytes the recall read, only telemetry changed: the row's file
        fields, recency and counts are updated and its searchable text is kept (nothing to
        tokenize again); otherwise (a hand edit the index has not seen yet) the whole row."""
        with self.write():
            delta = 0
            for entry, record, read in written:
                name = entry.name[: -len(".md")]
                row = self.db.execute(
                    "SELECT key, mtime_ns, ctime_ns, size FROM records WHERE name = ? AND error IS NULL",
                    (name,),
                ).fetchone()
                if row is None or tuple(row) != _stored(read):
                    delta += self._upsert(entry, record, None)
                    continue
                stored = _stored(entry)
                self.db.execute(
                    "UPDATE records SET key = ?, mtime_ns = ?, ctime_ns = ?, size = ?,"
                    " recency_ns = max(?, coalesce(touched_ns, ?)),"
                    " recall_count = ?, last_recalled_at = ? WHERE name = ?",
                    (
                        *stored,
                        recency_ns(record, stored[1]),
                        -_LARGEST,
                        record.recall_count,
                        record.last_recalled_at,
                        name,
                    ),
                )
                delta += entry_hash(*entry) - entry_hash(*row)
            self._add_to_digest(delta)

    def record_deleted(self, name: str) -> None:
        with self.write():
            self._add_to_digest(self._delete(name))

    # A record's row as _delete and _touched read it: (id, key, mtime, ctime, size) and what a
    # hand edit is told by (error, content, updated, touched_ns).
    _OLD_ROW = (
        "SELECT id, key, mtime_ns, ctime_ns, size, error, content, updated, touched_ns"
        " FROM records WHERE name = ?"
    )

    def _delete(self, name: str, row: tuple | None = None) -> int:
        """Remove name's rows (row: as _OLD_ROW read it, when the caller has); returns the change
        to the folder digest."""
        if row is None:
            row = self.db.execute(self._OLD_ROW, (name,)).fetchone()
        if row is None:
            return 0
        self.db.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0],))
        self.db.execute("DELETE FROM record_days WHERE id = ?", (row[0],))
        self.db.execute("DELETE FROM record_vectors WHERE id = ?", (row[0],))
        self.db.execute("DELETE FROM records WHERE id = ?", (row[0],))
        return -entry_hash(*row[1:5])

    @staticmethod
    def _touched(
        row: tuple | None, entry: Entry, record: MemoryRecord | None, content: str | None
    ) -> int | None:
        """When the record was last edited by hand, as far as this index knows (module docstring):
        now, when its content changed since its row (as _OLD_ROW read it) while `updated` did not
        (or it was malformed and is a record again); else what the row kept; None for a record
        never seen."""
        if row is None or record is None:
            return None if row is None else row[8]
        error, before, updated, touched = row[5:]
        if error is not None or (before != content and updated == record.updated):
            return min(_stored(entry)[1], expiry.now_ns())
        return touched

    def _upsert(self, entry: Entry, record: MemoryRecord | None, problem: str | None) -> int:
        """Insert or replace the rows of entry's record; returns the change to the folder digest."""
        name = entry.name[: -len(".md")]
        content = None if record is None else content_digest(record)
        old = self.db.execute(self._OLD_ROW, (name,)).fetchone()
        touched = self._touched(old, entry, record, content)
        delta = self._delete(name, old) + entry_hash(*entry)
        values = (
            (None,) * 10
            if record is None
            else (
                record.description,
                record.type,
                record.provenance,
                record.created,
                record.updated,
                record.recall_count,
                record.last_recalled_at,
                record.expires,
                None if record.expires is None else _clamp(expiry.moment_ns(record.expires) or 0),
                content,
            )
        )
        stored = _stored(entry)
        recency = stored[1] if record is None else recency_ns(record, stored[1])
        if touched is not None:
            recency = max(recency, touched)
        cursor = self.db.execute(
            "INSERT INTO records (name, key, mtime_ns, ctime_ns, size, recency_ns, error, description,"
            " type, provenance, created, updated, recall_count, last_recalled_at, expires, expires_ns,"
            " content, touched_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, *stored, recency, problem, *values, touched),
        )
        if record is not None:
            self.db.executemany(
                "INSERT INTO record_days (id, day) VALUES (?, ?)",
                [(cursor.lastrowid, day.isoformat()) for day in record_days(record)],
            )
            self.db.execute(
                "INSERT INTO records_fts (rowid, name, description, body) VALUES (?, ?, ?, ?)",
                (
                    cursor.lastrowid,
                    index_text(name.replace("-", " ").replace("_", " ")),
                    index_text(record.description),
                    index_text(record.body),
                ),
            )
        return delta

    # --- reading ----------------------------------------------------------------------

    _COLUMNS = (
        "name, description, type, provenance, created, updated, recall_count, last_recalled_at,"
        " expires, recency_ns"
    )

    @staticmethod
    def _row(row: tuple) -> IndexedRecord:
        name, description, type_, provenance, created, updated, count, last, expires, recency = row
        record = MemoryRecord(
            name=name,
            description=description,
            type=type_,
            body="",
            provenance=provenance,
            created=created,
            updated=updated,
            recall_count=count,
            last_recalled_at=last,
            expires=expires,
        )
        return IndexedRecord(record, recency)

    def records(self, expired: bool | None = None) -> list[IndexedRecord]:
        """Every well-formed record, by name; expired=False: those in recall only, True: those out
        of it because their `expires` moment has come."""
        where = "" if expired is None else f" AND {'NOT ' if expired else ''}{_live()}"
        return [
            self._row(row)
            for row in self.db.execute(
                f"SELECT {self._COLUMNS} FROM records WHERE error IS NULL{where} ORDER BY name"
            )
        ]

    def recent(self, limit: int) -> list[IndexedRecord]:
        """The most recent well-formed records in recall (by recency_ns, then name), newest first."""
        return [
            self._row(row)
            for row in self.db.execute(
                f"SELECT {self._COLUMNS} FROM records WHERE error IS NULL AND {_live()}"
                " ORDER BY recency_ns DESC, name LIMIT ?",
                (limit,),
            )
        ]

    def by_names(self, names: Iterable[str]) -> Iterator[IndexedRecord]:
        """The named records that are well-formed and in recall."""
        for name in names:
            row = self.db.execute(
                f"SELECT {self._COLUMNS} FROM records WHERE error IS NULL AND name = ? AND {_live()}",
                (name,),
            ).fetchone()
            if row:
                yield self._row(row)

    def expired_names(self) -> set[str]:
        """The records whose `expires` moment has come (a partial index: cheap when few expire)."""
        return {
            name
            for (name,) in self.db.execute(
                f"SELECT name FROM records WHERE expires_ns IS NOT NULL AND NOT {_live()}"
            )
        }

    def problems(self) -> list[Problem]:
        return [
            Problem(name, error)
            for name, error in self.db.execute(
                "SELECT name, error FROM records WHERE error IS NOT NULL ORDER BY name"
            )
        ]

    def vectors(self, embedder: Embedder) -> tuple[list[str], Any]:
        """The well-formed records' names and their meaning vectors (a float32 matrix), those not
        embedded yet embedded now; kept in this handle until a record changes."""
        import numpy as np

        missing = self.db.execute(
            "SELECT r.id, r.name, r.description, f.body FROM records r JOIN records_fts f ON f.rowid = r.id"
            " LEFT JOIN record_vectors v ON v.id = r.id WHERE r.error IS NULL AND v.id IS NULL"
        ).fetchall()
        if missing:
            texts = [
                f"{name.replace('-', ' ')}. {description}. {body[:2000]}"
                for _, name, description, body in missing
            ]
            rows = embedder.embed(texts)
            with self.write():
                self.db.executemany(
                    "INSERT OR REPLACE INTO record_vectors (id, vector) VALUES (?, ?)",
                    [
                        (record_id, row.astype(np.float16).tobytes())
                        for (record_id, *_), row in zip(missing, rows, strict=True)
                    ],
                )
        marker = self.db.execute("SELECT count(*), max(id), sum(id) FROM record_vectors").fetchone()
        if self._vectors is not None and self._vectors[0] == marker:
            return self._vectors[1], self._vectors[2]
        found = self.db.execute(
            "SELECT r.name, v.vector FROM record_vectors v JOIN records r ON r.id = v.id"
            " WHERE r.error IS NULL"
        ).fetchall()
        names = [name for name, _ in found]
        matrix = (
            np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float16)
            .reshape(len(found), -1)
            .astype(np.float32)
            if found
            else np.zeros((0, 0), np.float32)
        )
        self._vectors = (marker, names, matrix)
        return names, matrix

    def rank(
        self, query: str, limit: int, today: dt.date | None = None, embedder: Embedder | None = None
    ) -> list[tuple[str, float]]:
        """rank_words (BM25, and the question's time), fused by reciprocal rank with the records'
        meaning when an embedder is given and the question is not mostly Chinese or Japanese
        (semantic.py): each ranking's top MEANING_DEPTH, 1 / (RRF_K + place) from each."""
        lexical = self.rank_words(query, max(limit, MEANING_DEPTH) if embedder else limit, today)
        if embedder is None or mostly_cjk(query):
            return lexical[:limit]
        words = read_time(query, today)[1] if today is not None else query
        names, matrix = self.vectors(embedder)
        if not names:
            return lexical[:limit]
        expired = self.expired_names()  # the vectors are kept for every record
        import numpy as np

        similarity = matrix @ embedder.embed([words])[0]
        closest = np.argsort(-similarity, kind="stable")[:MEANING_DEPTH]
        fused: dict[str, float] = {}
        for place, (name, _) in enumerate(lexical[:MEANING_DEPTH]):
            fused[name] = fused.get(name, 0.0) + 1 / (RRF_K + place + 1)
        for place, row in enumerate(closest):
            if similarity[row] > 0 and names[row] not in expired:
                fused[names[row]] = fused.get(names[row], 0.0) + 1 / (RRF_K + place + 1)
        return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]

    def rank_words(self, query: str, limit: int, today: dt.date | None = None) -> list[tuple[str, float]]:
        """Best matches by words over all of the user's records: (name, score), best first; when
        the query names a time (`dates.read_time`, relative to today), its records first
        (lexical.py says how)."""
        return lexical.rank(self.db, query, limit, today, _live("r"))
