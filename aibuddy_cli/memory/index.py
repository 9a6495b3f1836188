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

import bisect
import datetime as dt
import hashlib
import heapq
import itertools
import os
import sqlite3
import sys
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from ..build_progress import steps
from ..dates import Span, read_time, text_days
from ..store.cache_db import CacheDB, entry_hash, files_digest, select_in
from ..store.files import Entry
from ..store.folder_watch import cursor_source, further_on
from ..text import index_text
from . import expiry, lexical, ngrams
from .records import MemoryRecord
from .semantic import Known, Meaning, SignCodes, code, columns, cosines, mostly_cjk, nearest, pack, unpack

SCHEMA_VERSION = 11

# What a first build makes once at the end instead of row by row (MemoryIndex._first_build): the
# character runs' index by record, and the trigger that lists each added record.
_GRAMS_BY_ID = "CREATE INDEX IF NOT EXISTS record_grams_by_id ON record_grams (id)"
_RECORD_ADDED = """CREATE TRIGGER IF NOT EXISTS record_added AFTER INSERT ON records
    BEGIN INSERT INTO record_changes (id) VALUES (new.id); END"""

_CODE_PACKS = """CREATE TABLE IF NOT EXISTS code_packs (
    model TEXT PRIMARY KEY, lineage INTEGER NOT NULL, seq INTEGER NOT NULL,
    ids BLOB NOT NULL, codes BLOB NOT NULL
);"""  # (made on opening an index of this version that an earlier aibuddy made: it had none)

_SCHEMA = f"""
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
CREATE TABLE IF NOT EXISTS record_codes (
    id INTEGER NOT NULL, model TEXT NOT NULL, code BLOB NOT NULL, PRIMARY KEY (id, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS record_vectors (
    id INTEGER NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (id, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS record_grams (
    gram TEXT NOT NULL, id INTEGER NOT NULL, count INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (gram, id)
) WITHOUT ROWID;
{_GRAMS_BY_ID};
CREATE TABLE IF NOT EXISTS record_gram_lengths (id INTEGER PRIMARY KEY, length INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meaning_vocab (piece TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meaning_models (what TEXT PRIMARY KEY, identity TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS record_days_by_day ON record_days (day, id);
CREATE INDEX IF NOT EXISTS record_days_by_id ON record_days (id);
CREATE TABLE IF NOT EXISTS record_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL);
{_RECORD_ADDED};
CREATE TRIGGER IF NOT EXISTS record_removed AFTER DELETE ON records
    BEGIN INSERT INTO record_changes (id) VALUES (old.id); END;
CREATE TRIGGER IF NOT EXISTS record_renamed AFTER UPDATE OF id, name, error ON records
    BEGIN INSERT INTO record_changes (id) VALUES (old.id), (new.id); END;
CREATE TRIGGER IF NOT EXISTS code_added AFTER INSERT ON record_codes
    BEGIN INSERT INTO record_changes (id) VALUES (new.id); END;
CREATE TRIGGER IF NOT EXISTS code_removed AFTER DELETE ON record_codes
    BEGIN INSERT INTO record_changes (id) VALUES (old.id); END;
CREATE TRIGGER IF NOT EXISTS vector_added AFTER INSERT ON record_vectors
    BEGIN INSERT INTO record_changes (id) VALUES (new.id); END;
CREATE TRIGGER IF NOT EXISTS vector_removed AFTER DELETE ON record_vectors
    BEGIN INSERT INTO record_changes (id) VALUES (old.id); END;
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    name, description, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""
_SCHEMA += _CODE_PACKS


MEANING_DEPTH = 50  # how deep each ranking goes into the fusion of words and meaning
RRF_K = 60  # reciprocal-rank fusion's usual constant
SHORTLIST = 200  # records scored exactly by meaning, of those sharing the most signs with the question
MEANING_SHARE = 0.5  # a match by meaning scores at least this share of the best one's cosine

_KEPT_CODES: dict[tuple[str, str], SignCodes | None] = {}  # by index file and model: a server's
_KEPT_GRAMS: dict[str, ngrams.GramPostings | None] = {}  # by index file: a server's
_KEPT_GUARD = threading.Lock()
_EMBEDDED: dict[tuple[str, str], tuple[int, int | None]] = {}  # by index file and model: the
# generation at which every record had a vector (the threads of a server share it)
_WRITING: Counter[tuple[str, str]] = Counter()  # (index, record name): being written by this process,
# which tells the index itself (MemoryIndex.writing)
_WRITTEN: dict[tuple[str, str], int] = {}  # (index, record name): the ticket of this process's last
# write, oldest first; the oldest go beyond WRITTEN_KEPT (a refresh older than them is told it cannot tell)
WRITTEN_KEPT = 50_000
_FORGOTTEN = [0]  # the latest ticket of a write _WRITTEN no longer holds
_TICKETS = itertools.count(1)
_SKIPPED: set[tuple[str, str]] = set()  # (index, record name): left by a refresh while being written

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


Read = tuple[bytes, Entry]  # a file's bytes and its Entry as it was read
Loaded = tuple[Entry, MemoryRecord | None, str | None] | None
"""What reading one file gave: its entry as read, the record or None, the problem or None;
None when the file vanished before it could be read."""


def fuse(
    rankings: Iterable[list[tuple[str, float]]], limit: int, weights: Iterable[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: each ranking gives its place p the score w / (RRF_K + p), summed per
    name (w: the ranking's weight, 1 unless given); the best `limit`, by that sum (one scale,
    whatever each ranking's own scores were)."""
    fused: dict[str, float] = {}
    rankings = list(rankings)
    for ranking, weight in zip(rankings, [1.0] * len(rankings) if weights is None else weights, strict=True):
        for place, (name, _) in enumerate(ranking, 1):
            fused[name] = fused.get(name, 0.0) + weight / (RRF_K + place)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]


class Ranking(NamedTuple):
    """What ranked() found: the fused ranking, the signals that ranked ("words", and the model's
    "meaning" or "embedding"), and each signal's own ranking (meaning: its matches only)."""

    scored: list[tuple[str, float]]
    signals: list[str]
    words: list[tuple[str, float]]
    meaning: list[tuple[str, float]]


def _ids(blob: bytes) -> array[int]:
    found = array("q", blob)
    if sys.byteorder == "big":
        found.byteswap()
    return found


def _ids_blob(ids: array[int]) -> bytes:
    """ids as the index keeps them: 64-bit little-endian integers, one after another."""
    if sys.byteorder == "big":
        ids = array("q", ids)
        ids.byteswap()
    return ids.tobytes()


class CodePack(NamedTuple):
    """The sign codes of one model, as a one-shot command reads them: the ids (ascending) and
    their codes laid out for semantic.nearest, in one row of the index instead of one row a
    record (100,000 records: 1 ms to read instead of 55), as of the index's generation `lineage`
    and change `seq`, when every well-formed record had a code. A process renews it from the
    records changed since (record_changes) and keeps it for the next one."""

    model: str
    lineage: int
    seq: int
    ids: array[int]
    codes: bytes

    @classmethod
    def of(cls, model: str, lineage: int, seq: int, rows: list[tuple[int, bytes]]) -> CodePack | None:
        """From (id, code) rows, ids ascending; None when the codes are not all of one width."""
        if len({len(blob) for _, blob in rows}) > 1:
            return None
        ids = array("q", (key for key, _ in rows))
        return cls(model, lineage, seq, ids, columns([blob for _, blob in rows]))

    def width(self) -> int | None:
        return len(self.codes) // len(self.ids) if self.ids else None

    def merged(self, changed: list[int], fresh: dict[int, bytes]) -> CodePack | None:
        """This pack with the records `changed` (ascending) taken out and those of them in fresh
        (id -> code) put in, in id order; None when a code is of another width."""
        count, width = len(self.ids), self.width()
        widths = {len(blob) for blob in fresh.values()} | ({width} if width else set())
        if len(widths) > 1:
            return None
        width = next(iter(widths), 0)
        ids: array[int] = array("q")
        runs: list[tuple[int, int] | bytes] = []  # kept places [start, end), or a new code
        start = 0
        for key in changed:
            place = bisect.bisect_left(self.ids, key, start)
            if place > start:
                runs.append((start, place))
                ids.extend(self.ids[start:place])
            if place < count and self.ids[place] == key:
                place += 1
            if key in fresh:
                runs.append(fresh[key])
                ids.append(key)
            start = place
        if start < count:
            runs.append((start, count))
            ids.extend(self.ids[start:])
        codes = b"".join(
            self.codes[column * count + run[0] : column * count + run[1]]
            if isinstance(run, tuple)
            else run[column : column + 1]
            for column in range(width)
            for run in runs
        )
        return self._replace(ids=ids, codes=codes)


class IndexedRecord(NamedTuple):
    record: MemoryRecord  # header fields only; body is ""
    recency_ns: int  # see recency_ns(): header dates, else the file's mtime


class Problem(NamedTuple):
    """A record file that could not be used (malformed, in conflict, unreadable), by name."""

    name: str
    message: str


class MemoryIndex(CacheDB):
    """Besides the file: for a process that ranks by meaning again and again (a server), the
    records' sign codes in memory (`SignCodes`), kept until the index's codes change (the meta
    row `vectors`, a random value each writer that adds or removes codes sets anew)."""

    schema = _SCHEMA
    version = SCHEMA_VERSION
    tables = (
        "meta", "cursors", "records", "record_days", "record_codes", "record_vectors", "record_grams",
        "record_gram_lengths", "meaning_vocab", "meaning_models", "records_fts", "record_changes",
        "code_packs",
    )  # fmt: skip
    added = (_CODE_PACKS,)

    # --- keeping it current -----------------------------------------------------------

    def cursors(self) -> list[str]:
        """The cursors (store.folder_watch.Changes) the stores' watches gave when each last brought the
        index up to date: several long-lived processes each keep their own."""
        return [str(cursor) for (cursor,) in self.db.execute("SELECT cursor FROM cursors")]

    def _keep_cursor(self, cursor: str | None) -> None:
        """Keep cursor, unless one of the same watch and epoch already stands further on (another
        thread of this process brought the index further meanwhile: going back would only make
        the next refresh look at those files again)."""
        if cursor is not None:
            source = cursor_source(cursor)
            kept = self.db.execute("SELECT cursor FROM cursors WHERE watch = ?", (source,)).fetchone()
            if kept is not None and further_on(kept[0], cursor):
                return
            self.db.execute("INSERT OR REPLACE INTO cursors (watch, cursor) VALUES (?, ?)", (source, cursor))
            # Servers that ended left theirs: keep the latest few.
            self.db.execute(
                "DELETE FROM cursors WHERE rowid NOT IN"
                " (SELECT rowid FROM cursors ORDER BY rowid DESC LIMIT 16)"
            )

    def refresh_changed(
        self,
        entries: list[Entry | None],
        names: Iterable[str],
        load: Callable[[Entry], Loaded],
        cursor: str,
        ticket: int | None = None,
    ) -> None:
        """Bring the rows of the records `names` in line with `entries` (theirs, None where the file
        is gone), the only files changed since the index last saw the folder; then keep cursor.
        ticket: taken before entries were read (see ticket)."""
        wanted = dict(zip(names, entries, strict=True))
        stored = {
            name: self.db.execute(
                "SELECT mtime_ns, ctime_ns, size FROM records WHERE name = ?", (name,)
            ).fetchone()
            for name in wanted
        }
        differ = {name for name, entry in wanted.items() if (entry and _stored(entry)[1:]) != stored[name]}
        kept, left = self._left_to_writers(ticket, differ)
        changed = [entry for name, entry in wanted.items() if name in kept and entry]
        removed = [name for name, entry in wanted.items() if name in kept and entry is None]
        self._apply(changed, removed, [load(entry) for entry in changed], None if left else cursor)

    def refresh(
        self,
        entries: list[Entry],
        load: Callable[[Entry, Read | None], Loaded],
        cursor: str | None = None,
        read_many: Callable[[list[str]], dict[str, Read]] | None = None,
        ticket: int | None = None,
    ) -> None:
        """Bring the index in line with the folder listing `entries`; then keep cursor (the
        watch's, when the listing was made after it was given); ticket: taken before the listing.

        The folder digest (a sum of per-file hashes, kept current by every upsert and delete)
        answers "anything changed?" without reading 10,000 rows; only then are rows compared.
        load(entry, read) makes a file's Loaded from its bytes and Entry as read, or reads it
        itself (read None); read_many, when given, reads the changed files BULK at a time.
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
        differ = {name for name, entry in current.items() if seen.get(name) != _stored(entry)[1:]}
        kept, left = self._left_to_writers(ticket, differ | (seen.keys() - current.keys()))
        changed = [entry for name, entry in current.items() if name in kept and name in differ]
        removed = [name for name in seen if name not in current and name in kept]
        if left:
            cursor = None
        loaded: list[Loaded] = []
        read: dict[str, Read] = {}
        for place, entry in enumerate(steps("memory index: reading records", changed)):
            if read_many is not None and place % self.BULK == 0:
                read = read_many([later.key for later in changed[place : place + self.BULK]])
            loaded.append(load(entry, read.get(entry.key)))
        self._apply(changed, removed, loaded, cursor)

    def _apply(
        self, changed: list[Entry], removed: list[str], loaded: list[Loaded], cursor: str | None
    ) -> None:
        with self.write():
            pairs = steps("memory index: indexing", list(zip(changed, loaded, strict=True)))
            if not removed and self.db.execute("SELECT 1 FROM records LIMIT 1").fetchone() is None:
                delta = self._insert_new(outcome for _, outcome in pairs)
            else:
                delta = sum(self._delete(name) for name in removed)
                for entry, outcome in pairs:
                    if outcome is None:
                        delta += self._delete(entry.name[: -len(".md")])
                    else:
                        delta += self._upsert(*outcome)
            self._add_to_digest(delta)
            self._keep_cursor(cursor)

    def _add_to_digest(self, delta: int) -> None:
        if delta:
            self.set_digest((self.stored_digest() or 0) + delta)

    def _where(self) -> str:
        """This index among the process's (its file, or the memory of one made in memory)."""
        return f"memory:{id(self)}" if self.in_memory else str(self.path)

    def ticket(self) -> int:
        """Taken before listing or reading the files a refresh compares (refresh, refresh_changed):
        a write this process makes after it is the writer's to index."""
        with _KEPT_GUARD:
            return next(_TICKETS)

    def _left_to_writers(self, ticket: int | None, differ: set[str]) -> tuple[set[str], bool]:
        """Of the names whose files differ from their rows as a refresh that took ticket read
        them: those it brings in line, and whether it left any to be looked at again. It leaves
        alone what this process is writing (the writer tells the index, and looks at the file
        again should a refresh have left it meanwhile: writing), and what it wrote since ticket
        (the row may describe a later file than the refresh read: the refresh then does not keep
        its cursor, so the next one looks again)."""
        if ticket is None:
            return differ, False
        where = self._where()
        with _KEPT_GUARD:
            writing = {name for name in differ if _WRITING[(where, name)] > 0}
            _SKIPPED.update((where, name) for name in writing)
            if ticket < _FORGOTTEN[0]:  # writes since it may be forgotten: its reads are kept,
                return differ - writing, True  # its cursor not (the next refresh looks again)
            since = {name for name in differ - writing if _WRITTEN.get((where, name), 0) > ticket}
        return differ - writing - since, bool(since)

    @contextmanager
    def writing(self, names: Iterable[str], current: Callable[[str], Entry | None]) -> Iterator[None]:
        """Around a write of names' files by this process and its telling the index (records_written,
        recalls_written, record_deleted): meanwhile a refresh on another thread leaves those
        names to the writer instead of reading, parsing and indexing them again as hand edits
        (with many agents on one server, every recall did so for the files others had just
        written). A name a refresh left meanwhile is looked at once more at the end (current:
        its file's Entry now): had someone else changed it since (an editor, another process),
        or should the block fail, the cursors go and the next refresh compares every file."""
        keys = [(self._where(), name) for name in names]
        with _KEPT_GUARD:
            _WRITING.update(keys)
        try:
            yield
        except BaseException:
            self._forget_cursors()
            raise
        finally:
            with _KEPT_GUARD:
                _WRITING.subtract(keys)
                done = next(_TICKETS)
                left = []
                for key in keys:
                    _WRITTEN.pop(key, None)
                    _WRITTEN[key] = done
                    if _WRITING[key] <= 0:
                        _WRITING.pop(key, None)
                        if key in _SKIPPED:
                            _SKIPPED.discard(key)
                            left.append(key[1])
                while len(_WRITTEN) > WRITTEN_KEPT:
                    _FORGOTTEN[0] = _WRITTEN.pop(next(iter(_WRITTEN)))
        for name in left:
            row = self.db.execute("SELECT mtime_ns, ctime_ns, size FROM records WHERE name = ?", (name,))
            entry = current(name)
            if row.fetchone() != (entry and _stored(entry)[1:]):
                self._forget_cursors()
                break

    def _forget_cursors(self) -> None:
        try:
            with self.write():
                self.db.execute("DELETE FROM cursors")
        except sqlite3.Error:
            pass  # the index is broken: it is made again on next use

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
        self.db.execute("DELETE FROM record_codes WHERE id = ?", (row[0],))
        self.db.execute("DELETE FROM record_vectors WHERE id = ?", (row[0],))
        self._rows_changed = True
        self.db.execute("DELETE FROM record_grams WHERE id = ?", (row[0],))
        self.db.execute("DELETE FROM record_gram_lengths WHERE id = ?", (row[0],))
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

    BULK = 1000  # records whose rows a first build inserts at once

    @contextmanager
    def _first_build(self) -> Iterator[None]:
        """Within a first build's transaction: the character runs' index by record and the
        trigger listing added records made once at the end (the same index, and the same
        record_changes: every record, in id order) instead of row by row. A build that fails rolls
        them back with its rows. (A larger page cache for the build saved 1 % more and kept its
        pages in a server's memory.)"""
        self.db.execute("DROP INDEX IF EXISTS record_grams_by_id")
        self.db.execute("DROP TRIGGER IF EXISTS record_added")
        yield
        self.db.execute("INSERT INTO record_changes (id) SELECT id FROM records ORDER BY id")
        self.db.execute(_GRAMS_BY_ID)
        self.db.execute(_RECORD_ADDED)

    def _insert_new(self, loaded: Iterable[Loaded]) -> int:
        """_upsert of every record read for an index that has none yet (a first build): the same
        rows with the same ids, inserted table by table BULK records at a time (one statement per
        table, not six per record, _first_build); returns the change to the folder digest."""
        delta = 0
        key = 0
        records: list[tuple] = []
        days: list[tuple[int, str]] = []
        texts: list[tuple[int, str, str, str]] = []
        grams: list[tuple[str, int, int, int]] = []
        lengths: list[tuple[int, int]] = []

        def flush() -> None:
            self.db.executemany(
                f"INSERT INTO records (id, {self._RECORD_COLUMNS}) VALUES (?, {self._SLOTS})", records
            )
            self.db.executemany("INSERT INTO record_days (id, day) VALUES (?, ?)", days)
            self.db.executemany(
                "INSERT INTO records_fts (rowid, name, description, body) VALUES (?, ?, ?, ?)", texts
            )
            self.db.executemany(
                "INSERT INTO record_grams (gram, id, count, length) VALUES (?, ?, ?, ?)", grams
            )
            self.db.executemany("INSERT INTO record_gram_lengths (id, length) VALUES (?, ?)", lengths)
            for rows in (records, days, texts, grams, lengths):
                rows.clear()

        with self._first_build():
            for outcome in loaded:
                if outcome is None:  # the file vanished before it was read
                    continue
                entry, record, problem = outcome
                key += 1
                name = entry.name[: -len(".md")]
                delta += entry_hash(*entry)
                content = None if record is None else content_digest(record)
                records.append((key, name, *self._values(entry, record, problem, content, None)))
                if record is not None:
                    days += [(key, day.isoformat()) for day in record_days(record)]
                    texts.append((key, *self._texts(name, record)))
                    counted = ngrams.grams(ngrams.record_text(name, record.description, record.body))
                    if counted:
                        length = sum(counted.values())
                        grams += [(gram, key, count, length) for gram, count in counted.items()]
                        lengths.append((key, length))
                if len(records) == self.BULK:
                    flush()
            flush()
        self._rows_changed = self._rows_changed or key > 0
        return delta

    _RECORD_COLUMNS = (
        "name, key, mtime_ns, ctime_ns, size, recency_ns, error, description, type, provenance,"
        " created, updated, recall_count, last_recalled_at, expires, expires_ns, content, touched_ns"
    )
    _SLOTS = ", ".join("?" * 18)

    @staticmethod
    def _values(
        entry: Entry,
        record: MemoryRecord | None,
        problem: str | None,
        content: str | None,
        touched: int | None,
    ) -> tuple:
        """A record's row of `records` but its name (_RECORD_COLUMNS after name), its content
        digest and touched_ns given."""
        stored = _stored(entry)
        if record is None:
            return (*stored, stored[1], problem, *(None,) * 10, touched)
        recency = recency_ns(record, stored[1])
        if touched is not None:
            recency = max(recency, touched)
        expires = None if record.expires is None else _clamp(expiry.moment_ns(record.expires) or 0)
        return (
            *stored,
            recency,
            problem,
            record.description,
            record.type,
            record.provenance,
            record.created,
            record.updated,
            record.recall_count,
            record.last_recalled_at,
            record.expires,
            expires,
            content,
            touched,
        )

    @staticmethod
    def _texts(name: str, record: MemoryRecord) -> tuple[str, str, str]:
        """A record's row of records_fts but its rowid: its words, each column's joined by spaces."""
        return (
            index_text(name.replace("-", " ").replace("_", " ")),
            index_text(record.description),
            index_text(record.body),
        )

    def _upsert(self, entry: Entry, record: MemoryRecord | None, problem: str | None) -> int:
        """Insert or replace the rows of entry's record; returns the change to the folder digest."""
        name = entry.name[: -len(".md")]
        content = None if record is None else content_digest(record)
        old = self.db.execute(self._OLD_ROW, (name,)).fetchone()
        touched = self._touched(old, entry, record, content)
        delta = self._delete(name, old) + entry_hash(*entry)
        self._rows_changed = True
        cursor = self.db.execute(
            f"INSERT INTO records ({self._RECORD_COLUMNS}) VALUES ({self._SLOTS})",
            (name, *self._values(entry, record, problem, content, touched)),
        )
        if record is not None:
            self.db.executemany(
                "INSERT INTO record_days (id, day) VALUES (?, ?)",
                [(cursor.lastrowid, day.isoformat()) for day in record_days(record)],
            )
            self.db.execute(
                "INSERT INTO records_fts (rowid, name, description, body) VALUES (?, ?, ?, ?)",
                (cursor.lastrowid, *self._texts(name, record)),
            )
            text = ngrams.record_text(name, record.description, record.body)
            self._keep_grams(cursor.lastrowid, ngrams.grams(text))
        return delta

    def _keep_grams(self, key: int | None, grams: Counter[str]) -> None:
        """A record's runs of CJK characters (ngrams.py), for the meaning of Chinese questions: each
        with its count and the record's length (its grams in all), which its score needs."""
        if grams and key is not None:
            length = sum(grams.values())
            self.db.executemany(
                "INSERT INTO record_grams (gram, id, count, length) VALUES (?, ?, ?, ?)",
                [(gram, key, count, length) for gram, count in grams.items()],
            )
            self.db.execute("INSERT INTO record_gram_lengths (id, length) VALUES (?, ?)", (key, length))

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

    def records(self, expired: bool | None = None, newest: int | None = None) -> list[IndexedRecord]:
        """Every well-formed record, by name; expired=False: those in recall only, True: those out
        of it because their `expires` moment has come. newest: only that many, the most recent
        (by recency_ns, then name), newest first."""
        where = "" if expired is None else f" AND {'NOT ' if expired else ''}{_live()}"
        order = " ORDER BY name" if newest is None else " ORDER BY recency_ns DESC, name LIMIT ?"
        return [
            self._row(row)
            for row in self.db.execute(
                f"SELECT {self._COLUMNS} FROM records WHERE error IS NULL{where}{order}",
                () if newest is None else (newest,),
            )
        ]

    def counted(self, expired: bool | None = None) -> int:
        """How many records records(expired) lists (counted in the index's own b-trees, not row
        by row: the expired ones are few, and their index is partial)."""
        wellformed = "(SELECT count(*) FROM records) - (SELECT count(*) FROM records WHERE error IS NOT NULL)"
        gone = (
            f"(SELECT count(*) FROM records WHERE expires_ns IS NOT NULL AND NOT {_live()} AND error IS NULL)"
        )
        counts = {None: wellformed, False: f"{wellformed} - {gone}", True: gone}
        return int(self.db.execute(f"SELECT {counts[expired]}").fetchone()[0])

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

    # --- meaning: record vectors beside the words (semantic.py) ----------------------------

    def _known(self, model: Meaning) -> Known | None:
        """The lookup of model's vocabulary in this index (filled on first use, and again when the
        model's files changed), or None for a model without one."""
        vocabulary = model.vocabulary()
        if vocabulary is None:
            return None
        identity, load = vocabulary
        kept = self.db.execute("SELECT identity FROM meaning_models WHERE what = 'vocabulary'").fetchone()
        if kept is None or kept[0] != identity:
            pieces = load()
            with self.write():
                self.db.execute("DELETE FROM meaning_vocab")
                self.db.executemany("INSERT INTO meaning_vocab (piece, id) VALUES (?, ?)", pieces.items())
                self.db.execute(
                    "INSERT OR REPLACE INTO meaning_models (what, identity) VALUES ('vocabulary', ?)",
                    (identity,),
                )

        def known(candidates: Iterable[str]) -> dict[str, int]:
            vocabulary = "SELECT piece, id FROM meaning_vocab WHERE piece IN ({})"
            return dict(select_in(self.db, vocabulary, list(candidates)))

        return known

    def embed_missing(
        self, model: Meaning, known: Known | None = None, among: list[int] | None = None
    ) -> list[int]:
        """Embed the well-formed records that have no vector of model yet (new or changed since);
        returns their ids. A record keeps its vectors until it changes (its row is replaced).
        among: the ids of the only records that may lack one (those changed since every record
        had one: a server after a save), None to look at all."""
        if among is None:
            if self._all_coded(model):
                return []
        elif not among:
            return []
        within = "" if among is None else f" AND r.id IN ({', '.join('?' * len(among))})"
        missing = self.db.execute(
            "SELECT r.id, r.name, r.description, f.body FROM records r JOIN records_fts f ON f.rowid = r.id"
            f" WHERE r.error IS NULL{within} AND NOT EXISTS"
            " (SELECT 1 FROM record_codes c WHERE c.id = r.id AND c.model = ?)",
            (*(among or ()), model.key),
        ).fetchall()
        if not missing:
            return []
        texts = [f"{name.replace('-', ' ')}. {about}. {body[:2000]}" for _, name, about, body in missing]
        made = list(
            zip(
                (record_id for record_id, *_ in missing), model.embed(texts, known, records=True), strict=True
            )
        )
        with self.write():
            self.db.executemany(
                "INSERT OR REPLACE INTO record_codes (id, model, code) VALUES (?, ?, ?)",
                [(record_id, model.key, code(vector)) for record_id, vector in made],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO record_vectors (id, model, vector) VALUES (?, ?, ?)",
                [(record_id, model.key, pack(vector)) for record_id, vector in made],
            )
            if (
                among is None
            ):  # Another model's vectors (a changed [models] embedding, a reinstalled package) go.
                self.db.execute("DELETE FROM record_codes WHERE model <> ?", (model.key,))
                self.db.execute("DELETE FROM record_vectors WHERE model <> ?", (model.key,))
            self._rows_changed = True
        return [record_id for record_id, _ in made]

    def _all_coded(self, model: Meaning) -> bool:
        """Whether every well-formed record has a code of model (a record's codes go with its row)."""
        coded = "SELECT count(*) FROM record_codes WHERE model = ?"
        return self.counted() == self.db.execute(coded, (model.key,)).fetchone()[0]

    # --- what a long-lived process keeps between questions ----------------------------------

    MMAP_BYTES = 1 << 30  # the index is read through the operating system's page cache, unbounded
    # by SQLite's own (2 MB a connection): a shortlist's 200 vectors cost 0.9 ms instead of 2.5 ms
    # at 10,000 records, and every thread of a server shares the pages.

    def _open(self) -> sqlite3.Connection:
        db = super()._open()
        if not self.in_memory:
            db.execute(f"PRAGMA mmap_size = {self.MMAP_BYTES}").fetchall()
        return db

    _rows_changed = False  # a record's rows (or codes) were written in this write transaction
    KEPT_CHANGES = 20_000  # the latest changes the index lists (record_changes); a process that kept
    # the records as they were before older ones reads them all again
    CHANGES_APPLIED = 2_000  # more changed records than this: all are read again (it is cheaper)

    @contextmanager
    def write(self) -> Iterator[None]:
        """CacheDB.write. Whatever writes a record's rows or codes (this version's or any later
        one's: the index's triggers) lists the record's id in record_changes; a process that keeps
        the records in memory (their codes, their phrases' scores) reads those again only. The
        meta row `generation` (a random value, set when the index is made) tells one index from
        another made anew at the same path (an older aibuddy makes it anew: another version)."""
        self._rows_changed = False
        with super().write():
            yield
            if self._rows_changed:
                self.db.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('generation', ?)",
                    (int.from_bytes(os.urandom(8), "little") >> 1,),
                )
                self.db.execute(
                    "DELETE FROM record_changes WHERE seq <= (SELECT max(seq) FROM record_changes) - ?",
                    (self.KEPT_CHANGES,),
                )

    def generation(self) -> tuple[sqlite3.Connection, int | None, int | None]:
        """What changes whenever a record's rows or codes do (telemetry alone does not): the
        index's generation and its latest change, with the connection they were read on (a
        reopened or rebuilt index is another). (None, None) for an index an older aibuddy made."""
        try:
            row = self.db.execute(
                "SELECT (SELECT value FROM meta WHERE key = 'generation'),"
                " (SELECT max(seq) FROM record_changes)"
            ).fetchone()
        except sqlite3.OperationalError:  # no record_changes: an older version's index
            return (self.db, None, None)
        return (self.db, row[0], row[1])

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """The reads inside see one state of the index (a read transaction). What a process keeps
        of one generation (PhraseScores, SignCodes, GramPostings) is filled from the state of that
        generation only: statements of their own each see the latest commit, and another thread's
        save between them had a cache of one change hold part of a later one (a record rewritten
        meanwhile was in neither, and a question found nothing)."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            if self.db.in_transaction:
                self.db.execute("COMMIT")

    def changed_since(self, seq: int | None) -> list[int] | None:
        """The ids of the records whose rows or codes changed after change seq (ascending), or
        None when the index no longer lists them all (or too many for reading them one by one)."""
        if seq is None:
            return None
        first = self.db.execute("SELECT min(seq) FROM record_changes").fetchone()[0]
        if first is None or first > seq + 1:
            return None
        ids = [
            key
            for (key,) in self.db.execute(
                "SELECT DISTINCT id FROM record_changes WHERE seq > ? ORDER BY id LIMIT ?",
                (seq, self.CHANGES_APPLIED + 1),
            )
        ]
        return None if len(ids) > self.CHANGES_APPLIED else ids

    def _sign_codes(self, model: Meaning) -> SignCodes | None:
        """The process's SignCodes of model for this index, brought up to date with the records
        changed since (shared by a server's threads); None (the pure-Python popcount) for a
        process's first question unless numpy is loaded already: a one-shot command does not pay
        numpy's import (about 60 ms) for one question."""
        where = (self._where(), model.key)
        _, lineage, seq = self.generation()
        with _KEPT_GUARD:
            if where not in _KEPT_CODES and "numpy" not in sys.modules:
                lexical.keep_latest(_KEPT_CODES, where, None)
                return None
            kept = _KEPT_CODES.get(where)
        if kept is not None and lineage is not None and kept.generation == (lineage, seq):
            with _KEPT_GUARD:
                lexical.keep_latest(_KEPT_CODES, where, kept)
            return kept
        if kept is not None and lexical.later_than(kept.generation, (lineage, seq)):
            return None  # another thread keeps a later state than this one reads: asked in SQL
        changed = None
        if kept is not None and lineage is not None and kept.generation[0] == lineage:  # type: ignore[index]
            changed = self.changed_since(kept.generation[1])  # type: ignore[index]
        if changed is not None and kept is not None:
            vectors = "NULL" if kept.vectors is None else "v.vector"
            rows = select_in(
                self.db,
                f"SELECT c.id, c.code, {vectors}, c.model FROM record_codes c LEFT JOIN record_vectors v"
                " ON v.id = c.id AND v.model = c.model WHERE c.id IN ({})",
                changed,
            )
            theirs = [(key, blob, vector) for key, blob, vector, of in rows if of == model.key]
            kept = kept.changed(theirs, changed, (lineage, seq))
        else:
            records, width = self.db.execute(
                "SELECT count(*), max(length(vector)) FROM record_vectors WHERE model = ?", (model.key,)
            ).fetchone()
            vectors = "v.vector" if records * (width or 0) <= SignCodes.VECTOR_BYTES else "NULL"
            rows = self.db.execute(
                f"SELECT c.id, c.code, {vectors} FROM record_codes c LEFT JOIN record_vectors v"
                " ON v.id = c.id AND v.model = c.model WHERE c.model = ? ORDER BY c.id",
                (model.key,),
            ).fetchall()
            kept = SignCodes(rows, (lineage, seq))
        with _KEPT_GUARD:
            lexical.keep_latest(_KEPT_CODES, where, kept)
        return kept

    def rank_meaning(
        self, query: str, model: Meaning, depth: int, among: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """The records in recall closest in meaning to query (only names in among, when given):
        (name, cosine), best first; only a match by meaning: from the model's floor and from
        MEANING_SHARE of the best cosine. The
        records' sign codes shortlist (the SHORTLIST sharing the most signs with the question's);
        their vectors, read for the shortlist only, score it."""
        known = self._known(model)
        where = (self._where(), model.key)
        _, lineage, seq = self.generation()
        with _KEPT_GUARD:
            before = _EMBEDDED.get(where)
        if lineage is None or before != (lineage, seq):  # (else none changed)
            changed: list[int] | None = None  # after a save: only those changed since all had one
            if before is not None and before[0] == lineage:
                changed = self.changed_since(before[1])
            elif before is None and lineage is not None:  # a process's first question
                kept = self._stored_pack(model)  # (made when every record had a code)
                if kept is not None and kept.lineage == lineage:
                    changed = [] if kept.seq == seq else self.changed_since(kept.seq)
            embedded = self.embed_missing(model, known, changed)
            if embedded:  # the vectors just written are changes too: the next question starts
                _, _, after = self.generation()  # past them only when they are all there is (a
                since = self.changed_since(seq)  # record saved meanwhile is not to be missed)
                if since is not None and set(since) <= set(embedded):
                    seq = after
            if lineage is not None:
                with _KEPT_GUARD:
                    lexical.keep_latest(_EMBEDDED, where, (lineage, seq))
        question = model.embed([query], known)[0]
        if not any(question):
            return []
        with self.snapshot():
            table = self._sign_codes(model)
            if table is not None:
                keys = None if among is None else self._ids_of(among)
                ids = table.shortlist(code(question), SHORTLIST, keys)
                return self._scored(ids, table, question, model, depth)
        packed = self._fresh_pack(model) if among is None else None  # (it writes: no snapshot)
        if packed is not None and packed.width() in (None, len(code(question))):
            ids = nearest(code(question), packed.ids, packed.codes, SHORTLIST)
        else:  # (a dated question's few records; codes of another width than the question's)
            ids = self._shortlist(code(question), model, among)
        return self._scored(ids, None, question, model, depth)

    def _scored(
        self, ids: list[int], table: SignCodes | None, question: list[float], model: Meaning, depth: int
    ) -> list[tuple[str, float]]:
        """rank_meaning's shortlist ids scored by their vectors (table's, when it keeps them)."""
        if not ids:
            return []
        if table is not None and table.vectors is not None:
            live = self.db.execute(
                f"SELECT id, name FROM records WHERE id IN ({', '.join('?' * len(ids))})"
                f" AND error IS NULL AND {_live()}",
                ids,
            ).fetchall()
            scores = table.cosines(question, [key for key, _ in live]) or []
            scored = [(name, score) for (_, name), score in zip(live, scores, strict=True)]
        else:
            rows = self.db.execute(
                "SELECT r.name, v.vector FROM record_vectors v JOIN records r ON r.id = v.id"
                f" WHERE v.model = ? AND v.id IN ({', '.join('?' * len(ids))})"
                f" AND r.error IS NULL AND {_live('r')}",
                (model.key, *ids),
            ).fetchall()
            if table is not None:
                scores = cosines(question, [blob for _, blob in rows])
                scored = [(name, score) for (name, _), score in zip(rows, scores, strict=True)]
            else:
                scored = [(name, sum(map(float.__mul__, question, unpack(blob)))) for name, blob in rows]
        best = max((score for _, score in scored), default=0.0)
        scored = [(name, score) for name, score in scored if score >= max(model.floor, best * MEANING_SHARE)]
        return sorted(scored, key=lambda item: (-item[1], item[0]))[:depth]

    # --- a one-shot command's codes: one pack in the index ------------------------------------

    _packed: CodePack | None = None  # the last pack this object read or made

    def _stored_pack(self, model: Meaning) -> CodePack | None:
        """The pack of model's codes the index keeps (of any change: CodePack says which)."""
        kept = self._packed
        _, lineage, seq = self.generation()
        if kept is not None and kept.model == model.key and (kept.lineage, kept.seq) == (lineage, seq):
            return kept
        row = self.db.execute(
            "SELECT lineage, seq, ids, codes FROM code_packs WHERE model = ?", (model.key,)
        ).fetchone()
        self._packed = None if row is None else CodePack(model.key, row[0], row[1], _ids(row[2]), row[3])
        return self._packed

    def _fresh_pack(self, model: Meaning) -> CodePack | None:
        """The pack of model's codes at the index's latest change: the one kept, else made from it
        (the records changed since read again) or from all the codes, and kept for the next
        process; None when a well-formed record has no code (embed_missing comes first)."""
        kept = self._stored_pack(model)
        _, lineage, seq = self.generation()
        if kept is not None and (kept.lineage, kept.seq) == (lineage, seq):
            return kept
        with self.write():
            _, lineage, seq = self.generation()
            if lineage is None or seq is None:
                return None
            changed = self.changed_since(kept.seq) if kept is not None and kept.lineage == lineage else None
            if changed is not None and kept is not None:
                fresh = {
                    key: blob
                    for key, blob, of in select_in(
                        self.db, "SELECT id, code, model FROM record_codes WHERE id IN ({})", changed
                    )
                    if of == model.key
                }
                well_formed = "SELECT id FROM records WHERE error IS NULL AND id IN ({})"
                formed = select_in(self.db, well_formed, changed)
                if any(key not in fresh for (key,) in formed):
                    return None
                made = kept.merged(changed, fresh)
            else:
                if not self._all_coded(model):
                    return None
                rows = self.db.execute(
                    "SELECT id, code FROM record_codes WHERE model = ? ORDER BY id", (model.key,)
                ).fetchall()
                made = CodePack.of(model.key, lineage, seq, rows)
            if made is None:
                return None
            made = made._replace(lineage=lineage, seq=seq)
            self.db.execute(
                "INSERT OR REPLACE INTO code_packs (model, lineage, seq, ids, codes) VALUES (?, ?, ?, ?, ?)",
                (model.key, lineage, seq, _ids_blob(made.ids), made.codes),
            )
        self._packed = made
        return made

    def _shortlist(self, question: bytes, model: Meaning, among: set[str] | None) -> list[int]:
        """SignCodes.shortlist read from the index, in pure Python (a process's first question).
        (Outside a snapshot: the names are joined to their ids in the same statement.)"""
        bits = int.from_bytes(question, "little")
        if among is None:
            codes = self.db.execute("SELECT id, code FROM record_codes WHERE model = ?", (model.key,))
        else:
            codes = self.db.execute(
                "SELECT c.id, c.code FROM record_codes c JOIN records r ON r.id = c.id"
                f" WHERE c.model = ? AND r.name IN ({', '.join('?' * len(among))})",
                (model.key, *sorted(among)),
            )
        shortlist = heapq.nsmallest(
            SHORTLIST,
            (((int.from_bytes(blob, "little") ^ bits).bit_count(), record_id) for record_id, blob in codes),
        )
        return [record_id for _, record_id in shortlist]

    def rank_characters(
        self, query: str, depth: int, among: set[str] | None = None
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """The records in recall that share the most of query's runs of CJK characters, by
        ngrams.py's score (only names in among, when given): the best `depth` (name, score), best
        first, and those of them that count as a match by meaning (ngrams.matches). Reads the
        postings of the question's grams only (its rarest ngrams.QUESTION_GRAMS), and sums them in
        SQLite (a Python loop over the postings of a common character costs ten times as much), or,
        in a process that asks again (a server), in numpy over the postings it keeps."""
        with self.snapshot():
            return self._ranked_characters(query, depth, among)

    def _ranked_characters(
        self, query: str, depth: int, among: set[str] | None
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        question = ngrams.grams(query)
        records, total = self.db.execute("SELECT count(*), total(length) FROM record_gram_lengths").fetchone()
        if not question or not records:
            return [], []
        postings = self._gram_postings()
        unknown = [gram for gram in question if postings is None or postings.held(gram) is None]
        held = {gram: count for gram in question if postings is not None and (count := postings.held(gram))}
        counted = "SELECT gram, count(*) FROM record_grams WHERE gram IN ({}) GROUP BY gram"
        held.update(select_in(self.db, counted, unknown))
        weights = ngrams.weights(question, held, records)
        if not weights:
            return [], []
        constant, per_gram = ngrams.length_terms(total / records)
        within = None if among is None else self._ids_of(among)
        if postings is not None:
            read = "SELECT id, count, length FROM record_grams WHERE gram = ? ORDER BY id"
            of = lambda gram: self.db.execute(read, (gram,)).fetchall()  # noqa: E731
            rows = postings.best(weights, constant, per_gram, of, within, SHORTLIST)
        else:
            rows = self._summed(weights, constant, per_gram, within)
        keys = [key for key, _, _ in rows]
        names = dict(
            self.db.execute(
                f"SELECT id, name FROM records WHERE id IN ({', '.join('?' * len(keys))})"
                f" AND error IS NULL AND {_live()}",
                keys,
            ).fetchall()
        )
        whole = ngrams.characters(question, held, records) or 1.0
        kept = [ngrams.Scored(names[key], score, cover / whole) for key, score, cover in rows if key in names]
        ranked = kept[:depth]
        matched = ngrams.matches(ranked)
        return [(item.name, item.score) for item in ranked], [(item.name, item.score) for item in matched]

    def _summed(
        self, weights: dict[str, ngrams.Weight], constant: float, per_gram: float, among: list[int] | None
    ) -> list[tuple[int, float, float]]:
        """GramPostings.best in SQLite: the SHORTLIST best (id, score, cover) of the records among
        (ids) when given, best first."""
        within = "" if among is None else f" AND g.id IN ({', '.join('?' * len(among))})"
        return self.db.execute(
            f"WITH q (gram, weight, cover) AS (VALUES {', '.join(['(?, ?, ?)'] * len(weights))})"
            " SELECT g.id, sum(q.weight * g.count / (g.count + ? + ? * g.length)) AS score, sum(q.cover)"
            f" FROM q JOIN record_grams g ON g.gram = q.gram WHERE 1{within}"
            " GROUP BY g.id ORDER BY score DESC, g.id LIMIT ?",
            (*(value for gram, weight in weights.items() for value in (gram, *weight)), constant, per_gram,
             *(among or ()), SHORTLIST),
        ).fetchall()  # fmt: skip

    def _gram_postings(self) -> ngrams.GramPostings | None:
        """The process's GramPostings of this index at its current generation (a new one after any
        change); None for the first Chinese question of a process without numpy loaded (a one-shot
        command: SQLite sums the postings) or an index of an older version."""
        where = self._where()
        _, lineage, seq = self.generation()
        with _KEPT_GUARD:
            if lineage is None or (where not in _KEPT_GRAMS and "numpy" not in sys.modules):
                lexical.keep_latest(_KEPT_GRAMS, where, None)
                return None
            kept = _KEPT_GRAMS.get(where)
            if kept is not None and lexical.later_than(kept.generation, (lineage, seq)):
                return None  # another thread keeps a later state than this one reads: summed in SQL
            if kept is None or kept.generation != (lineage, seq):
                kept = ngrams.GramPostings((lineage, seq))
            lexical.keep_latest(_KEPT_GRAMS, where, kept)
        return kept

    def _ids_of(self, names: set[str]) -> list[int]:
        """The ids of the records names (by name)."""
        named = "SELECT id FROM records WHERE name IN ({})"
        return [key for (key,) in select_in(self.db, named, sorted(names))]

    def rank(
        self, query: str, limit: int, today: dt.date | None = None, model: Meaning | None = None
    ) -> list[tuple[str, float]]:
        """ranked()'s fused ranking."""
        return self.ranked(query, limit, today, model).scored

    def ranked(
        self, query: str, limit: int, today: dt.date | None = None, model: Meaning | None = None
    ) -> Ranking:
        """rank_words (BM25, and the question's time), fused by reciprocal rank with the records'
        meaning when a model is given: the model's vectors, or, for a question mostly in Chinese or
        Japanese and a model that reads no Chinese (the static one), the characters it shares
        with the records (rank_characters, at ngrams.WEIGHT); and the signals that ranked:
        ["words"] or ["words", model.signal] (Ranking). A question that names a time, of which
        there are records, is matched by meaning among those records only (the time narrows, the
        meaning decides within it)."""
        by_words = self.rank_words(query, max(limit, MEANING_DEPTH) if model else limit, today)
        if model is None:
            return Ranking(by_words[:limit], ["words"], by_words, [])
        spans, words = read_time(query, today) if today is not None else ([], query)
        among = (self._dated(spans) or None) if spans else None
        if not model.reads_cjk and mostly_cjk(query):
            ranked, matched = self.rank_characters(words, MEANING_DEPTH, among)
            fused = fuse([by_words[:MEANING_DEPTH], ranked], 2 * MEANING_DEPTH, [1.0, ngrams.WEIGHT])
            # The matches first (a shared word, or by meaning): a record of the question's time
            # that shares no word, lifted by a character or two, must not take one of the five.
            first = set(lexical.above_floor(by_words, len(by_words))) | dict(matched).keys()
            fused = sorted(fused, key=lambda item: item[0] not in first)[:limit]
            return Ranking(fused, ["words", "meaning"], by_words, matched)
        meaning = self.rank_meaning(words, model, MEANING_DEPTH, among)
        fused = fuse([by_words[:MEANING_DEPTH], meaning], limit)
        return Ranking(fused, ["words", model.signal], by_words, meaning)

    def rank_words(self, query: str, limit: int, today: dt.date | None = None) -> list[tuple[str, float]]:
        """Best matches by words over all of the user's records: (name, score), best first; when
        the query names a time (`dates.read_time`, relative to today), its records first
        (lexical.py says how)."""
        where = self._where()
        with self.snapshot():
            _, lineage, seq = self.generation()
            scores = lexical.kept_scores(where, self.db, lineage, seq, self.changed_since)
            return lexical.rank(self.db, query, limit, today, _live("r"), scores)

    def _dated(self, spans: list[Span]) -> set[str]:
        """The well-formed records with a day in one of spans (the newest, lexical.DATED_LIMIT)."""
        return set(lexical.of_days(self.db, spans, _live("r")))
