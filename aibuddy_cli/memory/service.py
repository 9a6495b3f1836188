"""Per-user memory operations. The CLI and library callers both go through MemoryService."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict

from ..clock import utc_now
from ..errors import Busy, Conflict, InvalidInput, MalformedRecord, NotFound, Operation, Option, UsageError
from ..jsonvalues import to_json
from ..store.cache_db import rebuild_if_corrupt
from ..store.files import Entry, Store
from ..vault import Vault, memory_key, memory_prefix, validate_record_name
from .expiry import is_expired, parse_expires
from .header_edit import mark_recalled_text, updated_text
from .index import IndexedRecord, Loaded, MemoryIndex, Problem, Ranking
from .lexical import above_floor
from .manifest import ManifestLine, build_manifest
from .records import (
    MemoryRecord,
    MergeConflict,
    RecordHeaderJson,
    line_ending,
    parse_record,
    render_record,
    validate_body,
    validate_description,
    validate_type,
    with_line_ending,
)

if TYPE_CHECKING:
    from ..settings import Settings
    from .recall import Selection
    from .semantic import Meaning

def today() -> dt.date:
    """The day a question's "yesterday" or "last week" is counted from (UTC, as the headers)."""
    return dt.datetime.now(dt.UTC).date()
HISTORY_FOLDER = ".history"  # memory/<user>/.history/<name>.jsonl: hidden, so no scan lists it
HISTORY_LIMIT = 5  # previous versions kept per record; older ones are dropped


# --- what the operations answer, each with its one JSON shape (tests/operations/test_json_contract.py) ---


class RecordListJson(TypedDict):
    user: str
    records: list[RecordHeaderJson]
    problems: list[Problem]


class RecordList(NamedTuple):
    """`memory list`: the user's records without bodies; malformed files as problems."""

    user: str
    records: list[IndexedRecord]
    problems: list[Problem]
    expired_left_out: int = 0  # expired records a list of those in recall left out
    only_expired: bool = False  # a list of the expired records only (`memory list --expired`)
    more: int = 0  # records a list cut to the newest few left out (`--limit`, a terminal's page)

    def to_json(self) -> RecordListJson:
        return {
            "user": self.user,
            "records": [item.record.to_json(body=False) for item in self.records],
            "problems": to_json(self.problems),
        }


class Manifest(NamedTuple):
    """`memory manifest`: the recall window."""

    user: str
    query: str | None
    window: int
    lines: list[ManifestLine]
    problems: list[Problem]


class RecallResult(NamedTuple):
    user: str
    query: str
    method: str  # "model", "lexical" (the words alone), "words+meaning" or "words+embedding"
    records: list[MemoryRecord]
    dropped: list[str]  # model-named files not in the manifest
    warnings: list[str]  # this recall's, for its JSON; the service's sink has them too
    problems: list[Problem]


class UpdateResult(NamedTuple):
    record: MemoryRecord
    changed: bool


class Reverted(NamedTuple):
    """`memory revert`: the record as it is now."""

    path: str
    changed: bool
    version: int  # the version put back, as `memory history` numbers them (1: the latest)
    record: MemoryRecord


class RecordWrite(NamedTuple):
    """`memory save` / `memory update`: the record as it is now, and whether anything changed."""

    path: str
    changed: bool
    record: MemoryRecord


class RecordDeletedJson(TypedDict):
    path: str
    deleted: Literal[True]


class RecordDeleted(NamedTuple):
    path: str

    def to_json(self) -> RecordDeletedJson:
        return {"path": self.path, "deleted": True}


class Cleared(NamedTuple):
    """`memory clear`: the records removed, and the files that could not be (with why)."""

    user: str
    removed: list[str]
    not_removed: list[str]


class DueRecalls:
    """A user's recalls a server has answered and not yet counted in the files: the write-behind
    writes them all at once (under fifty agents, one lock and one write per file for many
    recalls, not five files per recall)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._due: dict[str, tuple[int, str]] = {}  # name: (recalls, the latest moment)

    def add(self, names: list[str], now: str) -> bool:
        """Count names recalled at now; True when nothing was due before (a write is to be
        handed to the write-behind; otherwise one is on its way and takes these too)."""
        with self._guard:
            first = not self._due
            for name in names:
                times, latest = self._due.get(name, (0, now))
                self._due[name] = (times + 1, max(latest, now))
            return first

    def due(self) -> bool:
        return bool(self._due)

    def take(self) -> dict[str, tuple[int, str]]:
        with self._guard:
            due, self._due = self._due, {}
            return due


# How long a server's recall counts wait for more before they are written: under many agents, one
# write of a record for all the recalls of those moments, and the user's lock held less often.
_RECALLS_LINGER = 0.2
_RECALLS_A_HOLD = 10  # the files written in one hold of the user's lock
_DUE: dict[str, DueRecalls] = {}  # by memory index: one per user of a vault, shared by a server's threads
_THREADS = threading.local()  # a thread's own handles on indexes services of other threads opened


def _thread_index(path: Path, most: int = 4) -> MemoryIndex:
    """This thread's MemoryIndex at path (a server's write-behind thread: see MemoryService._told),
    of the `most` it used last (the others closed)."""
    kept: dict[Path, MemoryIndex] = _THREADS.__dict__.setdefault("indexes", {})
    index = kept.pop(path, None) or MemoryIndex(path)
    kept[path] = index
    while len(kept) > most:
        kept.pop(next(iter(kept))).close()
    return index


class MemoryService:
    """One user's memory in one vault."""

    def __init__(
        self,
        vault: Vault,
        user: str,
        *,
        store: Store,
        settings: Settings,
        warnings: list[str],
    ) -> None:
        """warnings: the sink (a session's) for what the operations notice on the way: a model
        that failed, a record a recall skipped, an explicit write holding a credential-shaped value."""
        self.vault = vault
        self.warnings = warnings
        self.user = user
        self.prefix = memory_prefix(user)  # validates the user name
        self.store = store
        self.settings = settings
        self._index: MemoryIndex | None = None
        self._index_thread = 0  # the thread that opened _index (the only one that may use it)
        # A long-lived server's writer (store.locks.WriteBehind.submit: a job, and how long it may
        # linger for more of its kind): a recall's telemetry is written there after the answer, so
        # a recall never waits for the lock a save holds.
        self.telemetry_later: Callable[[Callable[[], None], float], None] | None = None

    # --- helpers ----------------------------------------------------------------------

    def _key(self, name: str) -> str:
        return memory_key(self.user, name)

    def _history_key(self, name: str) -> str:
        return f"{self.prefix}/{HISTORY_FOLDER}/{validate_record_name(name)}.jsonl"

    def _lock(self):  # noqa: ANN202 - a context manager from the store
        return self.store.lock(f"memory-{self.user}")

    def _load(self, entry: Entry, read: tuple[bytes, Entry] | None = None) -> Loaded:
        """The record of entry, from `read` (its bytes and Entry, read already) or the store."""
        name = entry.name[: -len(".md")]
        try:
            data, as_read = read or self.store.read(entry.key)
        except NotFound:
            return None
        except InvalidInput as exc:
            return entry, None, exc.message
        except OSError as exc:  # unreadable (permissions): reported like a malformed record
            return entry, None, f"cannot be read: {exc.strerror or exc}"
        try:
            return as_read, parse_record(name, data.decode("utf-8")), None
        except UnicodeDecodeError:
            return as_read, None, "not UTF-8 text"
        except MergeConflict as exc:
            return as_read, None, exc.located(entry.key).problem
        except MalformedRecord as exc:
            return as_read, None, exc.problem

    def close(self) -> None:
        """Close the derived index's SQLite handle (it opens again on next use)."""
        if self._index is not None:
            self._index.close()
            self._index = None

    def _opened(self) -> MemoryIndex:
        """The derived index as it stands, opened on this thread if it is not open yet."""
        if self._index is None:
            self._index = MemoryIndex(self.vault.memory_index_path(self.user))
            self._index_thread = threading.get_ident()
        return self._index

    def index(self) -> MemoryIndex:
        """The derived index, brought up to date with the folder (rebuilt if it is corrupt)."""
        index = self._opened()
        ticket = index.ticket()
        changes = self.store.changes(self.prefix, index.cursors())
        if changes.names is None or changes.cursor is None:
            listed = self.store.scan(self.prefix, ".md")
            index.refresh(listed, self._load, changes.cursor, self.store.read_many, ticket)
        else:  # the watch or the database knows what changed: no scan of the whole folder
            names = sorted(name[: -len(".md")] for name in changes.names if name.endswith(".md"))
            keys = [f"{self.prefix}/{name}.md" for name in names]
            read = self.store.read_many(keys)  # one query on a database; the rest (gone, refused) one by one
            entries = [
                read[key][1] if key in read else self._stat(name)
                for key, name in zip(keys, names, strict=True)
            ]
            index.refresh_changed(
                entries, names, lambda entry: self._load(entry, read.get(entry.key)), changes.cursor, ticket
            )
        return index

    def _stat(self, name: str) -> Entry | None:
        """A file of the folder as a scan lists it (whatever its name), None when it is gone."""
        try:
            return self.store.stat(f"{self.prefix}/{name}.md")
        except (NotFound, InvalidInput):
            return None

    def _read_text(self, name: str, *, fast: bool = True) -> tuple[str, MemoryRecord]:
        """The record's text and record. fast=False (show, update: off the hot path) reads the
        header through python-frontmatter; recall keeps the YAML-free parser for start-up."""
        text, record, _ = self._read_entry(name, fast=fast)
        return text, record

    def _read_entry(self, name: str, *, fast: bool = True) -> tuple[str, MemoryRecord, Entry]:
        """_read_text, and the file's Entry as it was read."""
        key = self._key(name)
        try:
            data, entry = self.store.read(key)
        except NotFound:
            raise NotFound(f"no memory record {name!r} for user {self.user}") from None
        except IsADirectoryError:
            raise InvalidInput(self._folder_problem(key)) from None
        except InvalidInput as exc:
            if "is a folder" in exc.message:
                raise InvalidInput(self._folder_problem(key)) from None
            raise
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRecord(name, "not UTF-8 text") from None
        try:
            return text, parse_record(name, text, fast=fast), entry
        except MergeConflict as exc:
            raise exc.located(key) from None

    @staticmethod
    def _folder_problem(key: str) -> str:
        return f"{key} is a folder, not a record file"

    def _folder_problems(self) -> list[Problem]:
        """Folders named like record files (memory/<user>/x.md/), which the scan does not list."""
        return [
            Problem(folder[: -len(".md")], self._folder_problem(f"{self.prefix}/{folder}"))
            for folder in self.store.folders(self.prefix)
            if folder.endswith(".md")
        ]

    def _read(self, name: str) -> MemoryRecord:
        return self._read_text(name, fast=False)[1]

    def _told(self) -> MemoryIndex | None:
        """The index this service's writes tell about themselves: the one open on this thread; in
        a server (which answers the next question from it) one opened without bringing it up to
        date, the write-behind thread's own (an SQLite handle serves the thread that opened it);
        None for a one-shot command that has not opened it."""
        if self._index is not None and self._index_thread == threading.get_ident():
            return self._index
        if self.telemetry_later is None:
            return None
        if self._index is None:
            return self._opened()
        return _thread_index(self.vault.memory_index_path(self.user))

    @contextmanager
    def _telling(self, names: list[str]) -> Iterator[MemoryIndex | None]:
        """Around writing names' files and telling the index (_told; MemoryIndex.writing)."""
        index = self._told()
        if index is None:
            yield None
            return
        with index.writing(names, self._stat):
            yield index

    def _write(self, record: MemoryRecord, *, create: bool = False, text: str | None = None) -> None:
        """Write record; `text` is its file text when it is not simply rendered (an edit in place)."""
        data = (render_record(record) if text is None else text).encode("utf-8")
        with self._telling([record.name]) as index:
            entry = self.store.write(self._key(record.name), data, create=create)
            if index is not None:
                index.records_written([(entry, record)])

    # --- operations -------------------------------------------------------------------

    def save(
        self, name: str, *, type: str, description: str, body: str, expires: str | None = None
    ) -> MemoryRecord:
        """Create a record with manual provenance; an existing name is a conflict. A credential-
        shaped value is kept (a person wrote it) with a warning. expires: as `--expires` gives it
        (a date, `30d`, `2w`, never; expiry.parse_expires)."""
        until = None if expires is None else parse_expires(expires)
        record = self._create(name, type, description, body, "manual", until)
        self._warn_explicit("memory save", name, description, body)
        self._warn_expired(record)
        return record

    def _warn_expired(self, record: MemoryRecord) -> None:
        if is_expired(record.expires):
            self.warnings.append(
                f"{record.name} expires {record.expires}, which has come: it is out of recall"
                " (memory list --expired shows it)"
            )

    def create_auto(self, name: str, *, type: str, description: str, body: str) -> MemoryRecord:
        """Create a record written by automatic extraction (provenance auto); credential-shaped
        values are redacted (`[redacted: api key]`)."""
        from ..redaction.detect import redact

        return self._create(name, type, redact(description)[0], redact(body)[0], "auto")

    def _warn_explicit(self, operation: str, name: str, description: str | None, body: str | None) -> None:
        from ..redaction.detect import holds_secret, warn_explicit

        warn_explicit(self.warnings, f"{operation} {name}: the record", holds_secret(description, body))

    def _create(
        self, name: str, type: str, description: str, body: str, provenance: str, expires: str | None = None
    ) -> MemoryRecord:
        validate_record_name(name)
        now = utc_now()
        record = MemoryRecord(
            name=name,
            description=validate_description(description),
            type=validate_type(type),
            body=validate_body(body),
            provenance=provenance,
            created=now,
            updated=now,
            expires=expires,
        )
        with self._lock():
            if self.store.exists(self._key(name)):
                raise Conflict(
                    f"memory record {name!r} already exists; use ", Operation("memory update", name)
                )
            self._forget_history(name)  # left by a record of that name removed outside aibuddy
            self._write(record, create=True)
        return record

    def update(
        self,
        name: str,
        *,
        type: str | None = None,
        description: str | None = None,
        body: str | None = None,
        expires: str | None = None,
    ) -> UpdateResult:
        """Change type, description, body or expiry (`expires`: as `--expires` gives it, `never`
        to take it away); name, provenance, created and telemetry are kept."""
        validate_record_name(name)
        if type is None and description is None and body is None and expires is None:
            raise UsageError(  # (or an expiry: the message scripts know is kept as it was)
                "nothing to update: give ", Option("type"), ", ", Option("description"), " or ",
                Option("body", cli="a body"),
            )
        until = None if expires is None else parse_expires(expires)
        with self._lock():
            text, current = self._read_text(name, fast=False)
            changed = current._replace(
                type=current.type if type is None else validate_type(type),
                description=current.description if description is None else validate_description(description),
                body=current.body
                if body is None
                else with_line_ending(validate_body(body), line_ending(text)),
                expires=current.expires if expires is None else until,
            )
            if changed == current:
                return UpdateResult(current, changed=False)
            record = changed._replace(updated=utc_now())
            self._write(record, text=updated_text(text, current, record))
        self._warn_explicit("memory update", name, description, body)
        if expires is not None:
            self._warn_expired(record)
        return UpdateResult(record, changed=True)

    def update_auto(self, name: str, *, description: str, body: str) -> MemoryRecord:
        """Update a record automatic extraction wrote; a manual record is never touched.
        Credential-shaped values are redacted."""
        from ..redaction.detect import redact

        description, body = redact(description)[0], redact(body)[0]
        with self._lock():
            text, current = self._read_text(name, fast=False)
            if current.provenance != "auto":
                raise Conflict(f"memory record {name!r} was written by a person; extraction never changes it")
            description = validate_description(description)
            body = with_line_ending(validate_body(body), line_ending(text))
            if (description, body) == (current.description, current.body):
                return current
            record = current._replace(description=description, body=body, updated=utc_now())
            # History first: a crash between the two writes repeats a version, never loses one.
            self._keep_history(current, record.updated or "", by="auto")
            self._write(record, text=updated_text(text, current, record))
        return record

    def take_over(self, name: str, *, type: str, description: str, body: str) -> MemoryRecord:
        """A person's version of a record automatic memory wrote (an update they edited before
        accepting it): it becomes `manual`, so extraction leaves it alone from now on, and the
        version it replaces joins the history (by "person"), as a revert's does."""
        validate_record_name(name)
        with self._lock():
            text, current = self._read_text(name, fast=False)
            record = current._replace(
                type=validate_type(type),
                description=validate_description(description),
                body=with_line_ending(validate_body(body), line_ending(text)),
                provenance="manual",
                updated=utc_now(),
            )
            self._keep_history(current, record.updated or "", by="person")
            self._write(record, text=updated_text(text, current, record))
        self._warn_explicit("memory accept", name, description, body)
        return record

    def revert(self, name: str, to: int = 1) -> Reverted:
        """Put back version `to` of the record's history (1: the one just before the current,
        as `memory history` numbers them). A person's act, never a model's: the record becomes
        `manual` (extraction leaves it alone from now on), `updated` is now, created, telemetry
        and expiry are kept, and the version it replaces joins the history (by "revert"), so a
        revert can itself be reverted. NotFound when there is no such version."""
        validate_record_name(name)
        with self._lock():
            text, current = self._read_text(name, fast=False)
            versions = list(reversed(self._history_entries(name)))
            if not versions:
                raise NotFound(f"memory record {name!r} has no earlier version kept to go back to")
            if not 1 <= to <= len(versions):
                raise NotFound(
                    f"memory record {name!r} keeps {len(versions)} earlier version(s): ",
                    Option("to"), f" {to} is not one of them (see ", Operation("memory history", name), ")",
                )
            version = versions[to - 1]
            try:
                description = validate_description(str(version.get("description", "")))
                kind = validate_type(str(version.get("type", current.type)))
                body = version.get("body", "")
                if not isinstance(body, str):
                    raise InvalidInput("its body is not text")
                body = with_line_ending(validate_body(body), line_ending(text))
            except InvalidInput as exc:
                raise InvalidInput(f"version {to} of {name!r} cannot be put back: {exc.message}") from None
            record = current._replace(
                description=description, type=kind, body=body, provenance="manual", updated=utc_now()
            )
            if (record.description, record.type, record.body, record.provenance) == (
                current.description,
                current.type,
                current.body,
                current.provenance,
            ):
                return Reverted(self._key(name), False, to, current)
            self._keep_history(current, record.updated or "", by="revert")
            self._write(record, text=updated_text(text, current, record))
        return Reverted(self._key(name), True, to, record)

    # --- history of automatic updates ---------------------------------------------------
    #
    # What an auto record said before extraction or consolidation changed it, one JSON object a
    # line, oldest first, at most HISTORY_LIMIT lines, in a hidden sidecar beside the records: the
    # record format (and the recall hot path, the manifest, the index and the merge driver that
    # read it) stays as it is. .gitattributes merges it with git's `union` driver, so two clones'
    # versions are both kept.

    def history(self, name: str) -> list[dict[str, Any]]:
        """The record's previous versions, newest first: description, type, body, created,
        updated (when that version was written) and replaced (when it stopped being current)."""
        validate_record_name(name)
        try:
            return list(reversed(self._history_entries(name)))
        except (InvalidInput, OSError):  # a folder or a link in its place: no history to show
            return []

    def _history_entries(self, name: str) -> list[dict[str, Any]]:
        import json

        from .. import jsonvalues

        try:
            data, _ = self.store.read(self._history_key(name))
        except NotFound:
            return []
        entries = []
        for line in data.decode("utf-8-sig", errors="replace").splitlines():  # (an editor's BOM too)
            try:
                entry = jsonvalues.loads(line)  # (NaN or Infinity: a damaged line too)
                json.dumps(entry, ensure_ascii=False).encode("utf-8")  # no lone surrogate (\ud800)
            except (ValueError, RecursionError):  # (UnicodeEncodeError is a ValueError)
                continue  # a damaged line (a hand edit) is skipped, not a failure of the update
            if isinstance(entry, dict):
                entries.append(entry)
        # Oldest first by when each was replaced: git's union merge puts two clones' lines in
        # file order, not time order (a stable sort keeps the file's order among equals).
        return sorted(entries, key=lambda entry: str(entry.get("replaced") or ""))

    def _keep_history(self, previous: MemoryRecord, replaced: str, *, by: str) -> None:
        """Add previous to the record's history; by: what replaced it ("auto": extraction or
        consolidation, "revert": a person's `memory revert`, "person": a proposal a person edited
        before accepting it)."""
        import json

        version = {
            "description": previous.description,
            "type": previous.type,
            "created": previous.created,
            "updated": previous.updated,
            "replaced": replaced,
            "body": previous.body,
            "provenance": previous.provenance,
            "by": by,
        }
        from ..redaction.detect import redacted

        # An automatic write: the replaced version may hold a value a person kept explicitly,
        # or one from before redaction existed; neither is copied into a new file as it was.
        entries = [redacted(entry) for entry in [*self._history_entries(previous.name), version]]
        entries = entries[-HISTORY_LIMIT:]
        text = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
        self.store.write(self._history_key(previous.name), text.encode("utf-8"))

    def _forget_history(self, name: str) -> None:
        """Remove the record's history with it; what cannot be removed (a folder in its place)
        is said, not a failure of the deletion that already happened."""
        key = self._history_key(name)
        try:
            self.store.delete(key)
        except NotFound:
            pass
        except (InvalidInput, OSError) as error:
            self.warnings.append(f"{key} was left in place: {getattr(error, 'message', None) or error}")

    def delete(self, name: str) -> None:
        validate_record_name(name)
        with self._lock():
            try:
                self.store.delete(self._key(name))
            except NotFound:
                raise NotFound(f"no memory record {name!r} for user {self.user}") from None
            self._forget_history(name)
            if self._index is not None:
                self._index.record_deleted(name)

    def texts(self) -> list[tuple[str, str]]:
        """Every well-formed record's file text, by name (what `memory export` writes)."""
        found = []
        for item in self.list_records().records:
            try:
                text, _ = self._read_text(item.record.name)
            except (NotFound, MalformedRecord):
                continue  # gone or damaged since the index saw it: list says so
            found.append((item.record.name, text))
        return found

    def restore(self, name: str, text: str, *, dry_run: bool = False) -> str:
        """Put back a record's file text as an export holds it: "restored" (written byte for byte,
        telemetry and provenance included), "no-op" (the vault has these very bytes) or "kept" (a
        different record of that name is there: never overwritten). MalformedRecord when the
        text is no record named name."""
        parse_record(name, text)  # refuses a text that is no record, or another record's
        key = self._key(name)
        with self._lock():
            try:
                current, _ = self.store.read(key)
            except NotFound:
                if not dry_run:
                    entry = self.store.write(key, text.encode("utf-8"), create=True)
                    if self._index is not None:
                        self._index.records_written([(entry, parse_record(name, text))])
                return "restored"
        return "no-op" if current == text.encode("utf-8") else "kept"

    def show(self, name: str) -> MemoryRecord:
        validate_record_name(name)
        return self._read(name)

    @rebuild_if_corrupt("_index")
    def list_records(self, expired: bool | None = None, newest: int | None = None) -> RecordList:
        """The user's well-formed records (by name) and the problems of the others. expired:
        None: all; False: those in recall (not expired), counting the expired ones left out;
        True: the expired ones only. newest: only that many, the most recently written or
        recalled first, counting the others (read from the index: a page of 100,000 records
        costs what a page of 1,000 does)."""
        index = self.index()
        problems = sorted([*index.problems(), *self._folder_problems()])
        records = index.records(expired, newest)
        more = 0 if newest is None else max(0, index.counted(expired) - len(records))
        left_out = len(index.expired_names()) if expired is False else 0
        return RecordList(self.user, records, problems, left_out, expired is True, more)

    @rebuild_if_corrupt("_index")
    def manifest(self, query: str | None = None) -> Manifest:
        """The recall window; with a query, its best lexical matches are reserved a place."""
        settings = self.vault.config.recall
        index = self.index()
        matched = [name for name, _ in self._rank(index, query, settings.lexical_share)] if query else []
        lines = build_manifest(index, matched, settings)
        return Manifest(self.user, query, settings.window, lines, index.problems())

    def count(self) -> int:
        return len(self.store.scan(self.prefix, ".md"))

    def clear(self) -> Cleared:
        """Remove every record file of this user (malformed ones too) and the records' history.
        Never offered to a model.

        A file that cannot be removed is reported in `not_removed`, not a stop.
        """
        removed: list[str] = []
        problems: list[str] = []
        with self._lock():
            for entry in self.store.scan(self.prefix, ".md"):
                try:
                    self.store.delete(entry.key)
                except NotFound:
                    continue
                except (InvalidInput, OSError) as exc:
                    problems.append(f"{entry.key}: {getattr(exc, 'message', None) or exc}")
                    continue
                removed.append(entry.name[: -len(".md")])
            for entry in self.store.scan(f"{self.prefix}/{HISTORY_FOLDER}", ".jsonl"):
                try:  # what the records said before goes with them
                    self.store.delete(entry.key)
                except NotFound:
                    continue
                except (InvalidInput, OSError) as exc:
                    problems.append(f"{entry.key}: {getattr(exc, 'message', None) or exc}")
            if self._index is not None:
                for name in removed:
                    self._index.record_deleted(name)
        return Cleared(self.user, sorted(removed), problems)

    @rebuild_if_corrupt("_index")
    def recall(self, query: str, limit: int | None = None) -> RecallResult:
        """Manifest → selection (model, else lexical) → at most max_bodies bodies, telemetry updated.

        A model failure of any kind falls back to lexical ranking with a warning. The warnings go
        to the sink once the recall has answered (a run again on a rebuilt index does not repeat
        them), and into the result, whose JSON lists them.
        """
        if not query.strip():
            raise InvalidInput("the recall query is empty")
        settings = self.vault.config.recall
        limit = settings.max_bodies if limit is None else limit
        if limit < 1:
            raise InvalidInput(Option("limit"), " must be at least 1")
        limit = min(limit, settings.max_bodies)
        index = self.index()
        ranking, method = self._ranked(index, query, max(settings.lexical_share, limit))
        ranked = [name for name, _ in ranking.scored]
        warnings: list[str] = []
        dropped: list[str] = []
        # The ranked choice, unless a model answers usefully: the best matches that share a word
        # with the query, a common one included (lexical.above_floor: the question's time alone when
        # none does), or match it by meaning (index.rank_meaning's floor).
        sharing = set(above_floor(ranking.words, len(ranking.words)))
        matched = sharing | dict(ranking.meaning).keys()
        names = [name for name, _ in ranking.scored[:limit] if name in matched]
        from ..models.calls import ModelSettings, call_role

        def select(role: ModelSettings) -> Selection | None:
            from .recall import select_with_model

            manifest = build_manifest(index, ranked, settings)
            return select_with_model(role, query, manifest, limit) if manifest else None

        models = self.vault.config.models
        fallback = "used lexical ranking instead"
        selection = call_role("recall", models, self.settings, select, warnings=warnings, fallback=fallback)
        if selection is not None:
            names, dropped, method = selection.names, selection.dropped, "model"
            if selection.dropped_count:
                warnings.append(f"dropped {selection.dropped_count} name(s) the recall model invented")
        records = self._mark_recalled(names, warnings)
        problems = index.problems()
        self.warnings.extend(warnings)
        return RecallResult(
            user=self.user,
            query=query,
            method=method,
            records=records,
            problems=problems,
            warnings=warnings,
            dropped=dropped,
        )

    def _rank(self, index: MemoryIndex, query: str, limit: int) -> list[tuple[str, float]]:
        return self._ranked(index, query, limit)[0].scored

    def _ranked(self, index: MemoryIndex, query: str, limit: int) -> tuple[Ranking, str]:
        """index.ranked with the meaning signal, and the method that ranked ("lexical": the words
        alone; "words+meaning": the static vectors fused in, or a Chinese question's characters
        (ngrams.py); "words+embedding": the `embedding` model's). The embedding model, when
        `[models] embedding` names one, replaces the static vectors; when it fails, or the static
        model cannot be loaded, the words alone rank, with a warning (recall never fails for
        meaning). `[recall] semantic = false` turns the static vectors and the characters off."""
        from ..errors import ModelError
        from .semantic import SemanticUnavailable

        model = self._meaning()
        if model is not None:
            try:
                ranking = index.ranked(query, limit, today(), model)
                return ranking, "lexical" if ranking.signals == ["words"] else "+".join(ranking.signals)
            except SemanticUnavailable as error:
                self.warnings.append(f"{error}; recall used the words alone")
            except ModelError as error:
                self.warnings.append(f"{error}; recall used the words alone")
        return index.ranked(query, limit, today()), "lexical"

    def _meaning(self) -> Meaning | None:
        """The model of meaning recall fuses with the words: the `embedding` role when named for
        itself (AIBUDDY_MODEL_EMBEDDING or [models] embedding: a chat model of `default` cannot
        embed), else the static vectors unless `[recall] semantic = false`."""
        from ..models.roles import model_settings
        from .semantic import EmbeddingModel, shared

        models = self.vault.config.models
        if models.get("embedding") is not None or "embedding" in self.settings.role_models:
            settings = model_settings("embedding", models, self.settings)
            if settings.configured:
                return EmbeddingModel(settings)
        return shared() if self.vault.config.recall.semantic else None

    def _recalled_later(self, names: list[str], warnings: list[str]) -> list[MemoryRecord]:
        """The chosen records as read, each counted as recalled now, their telemetry lines written
        by telemetry_later once the answer is out (under the user's lock, each file read again
        then, so concurrent recalls all count)."""
        records: list[MemoryRecord] = []
        now = utc_now()
        later: list[str] = []
        for name in names:
            try:
                text, record = self._read_text(name)
            except (NotFound, MalformedRecord) as exc:
                warnings.append(f"skipped {name}: {exc.message}")
                continue
            recalled = record.recalled(now)
            if mark_recalled_text(text, recalled) == text:
                warnings.append(f"recall of {name} not recorded: its header cannot be edited")
                records.append(record)
                continue
            records.append(recalled)
            later.append(name)
        if later and self.telemetry_later is not None:
            due = self._due()
            if due.add(later, now):
                self.telemetry_later(lambda: self._write_recalls(due.take()), _RECALLS_LINGER)
        return records

    def _due(self) -> DueRecalls:
        return _DUE.setdefault(str(self.vault.memory_index_path(self.user)), DueRecalls())

    def _write_recalls(self, due: dict[str, tuple[int, str]]) -> None:
        """Bump recallCount/lastRecalledAt of the records due (name: recalls not yet counted, the
        latest moment) under the user's lock (see _recalled_later), each file once whatever its
        count, and tell the index, so the next question neither re-reads these files nor renews
        the ranking caches of records whose words did not change."""
        ordered = sorted(due)
        for start in range(0, len(ordered), _RECALLS_A_HOLD):  # (a save waits for a few, not all)
            names = ordered[start : start + _RECALLS_A_HOLD]
            with self._lock(), self._telling_recalls(names) as written:
                for name in names:
                    try:
                        text, record, read = self._read_entry(name)
                    except (NotFound, MalformedRecord):
                        continue  # removed or broken since the recall read it: nothing to count
                    times, now = due[name]
                    done = self._recall_written(name, text, record.recalled(now, times))
                    if done is not None:
                        written.append((done[1], done[0], read))

    def _recall_written(
        self, name: str, text: str, recalled: MemoryRecord
    ) -> tuple[MemoryRecord, Entry] | None:
        """recalled (the record of file text, counted) written over text, only its telemetry lines
        changed: the record and its entry as written; None when its header cannot be edited so."""
        edited = mark_recalled_text(text, recalled)
        if edited == text:
            return None
        return recalled, self.store.write(self._key(name), edited.encode("utf-8"))

    @contextmanager
    def _telling_recalls(self, names: list[str]) -> Iterator[list[tuple[Entry, MemoryRecord, Entry]]]:
        """Around writing the recall counts of names: the block lists what it wrote (as written,
        the record, as read), and the index is told. Telling it is only a shortcut: when the index
        cannot take it, it forgets its cursors (MemoryIndex.writing) and the next refresh compares
        the files."""
        import sqlite3

        written: list[tuple[Entry, MemoryRecord, Entry]] = []
        try:
            with self._telling(names) as index:
                yield written
                if written and index is not None:
                    index.recalls_written(written)
        except (sqlite3.Error, Busy):
            pass

    def _mark_recalled(self, names: list[str], warnings: list[str]) -> list[MemoryRecord]:
        """Read the chosen bodies and bump recallCount/lastRecalledAt under the user's lock (in a
        server, only when that lock is free this instant; else after the answer: _recalled_later,
        so a recall never waits for a save).

        Written before the answer when it can be, the index learns the new file fields at once, so
        the next question does not take these files for hand edits to read and rank again.

        Only the telemetry lines of each file change, so a person's formatting survives. When the
        vault refuses a write (read-only, full disk, no permission) the recall still answers:
        telemetry is skipped from then on, with one warning, not one per record.
        """
        later = self.telemetry_later is not None
        if later and self._due().due():  # counts are on their way: these go with them
            return self._recalled_later(names, warnings)
        try:
            with self.store.lock(f"memory-{self.user}", 0.0) if later else self._lock():
                return self._count_recalls(names, warnings)
        except Busy as exc:  # (only the lock raises it: the index's own is _telling_recalls')
            if later:  # a save holds the lock now: count these after the answer
                return self._recalled_later(names, warnings)
            warnings.append(f"{exc.message}; recall telemetry not updated")
            records = []
            for name in names:
                try:
                    records.append(self._read_text(name)[1])
                except (NotFound, MalformedRecord):
                    continue
            return records

    def _count_recalls(self, names: list[str], warnings: list[str]) -> list[MemoryRecord]:
        """_mark_recalled's work, under the user's lock."""
        from ..errors import as_aibuddy_error

        records: list[MemoryRecord] = []
        now = utc_now()
        refused = False
        with self._telling_recalls(names) as written:
            for name in names:
                try:
                    text, record, read = self._read_entry(name)
                except (NotFound, MalformedRecord) as exc:
                    warnings.append(f"skipped {name}: {exc.message}")
                    continue
                if not refused:
                    try:
                        done = self._recall_written(name, text, record.recalled(now))
                    except OSError as exc:
                        refused = True
                        reason = as_aibuddy_error(exc).message
                        warnings.append(f"could not record the recall ({reason}); telemetry skipped")
                    else:
                        if done is None:
                            warnings.append(f"recall of {name} not recorded: its header cannot be edited")
                        else:
                            record = done[0]
                            written.append((done[1], record, read))
                records.append(record)
        return records
