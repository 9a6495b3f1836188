"""A derived SQLite cache under .aibuddy/: rebuilt when its schema changes or it is corrupt.

Both search indexes build on this. Each keeps a folder digest in its `meta` table: a sum of
per-file hashes of names and stat fields, so "did anything change?" costs one stat per file.

Where it lives is the vault's cache folder (`Vault.cache_dir`: .aibuddy/, or a per-user folder
for a read-only vault). When that cannot be written either (read-only, full disk, no
permission), the cache is built in memory for this process: reads answer, only slower.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar
from zlib import crc32

from ..errors import AibuddyError, Busy, write_refused
from .files import Entry

Method = TypeVar("Method", bound=Callable[..., Any])

MASK = (1 << 64) - 1
_K_CTIME, _K_SIZE = 1_000_003, 998_244_353


def to_signed(value: int) -> int:
    """A 64-bit hash as SQLite stores integers (signed)."""
    value &= MASK
    return value - (1 << 64) if value >= 1 << 63 else value


def entry_hash(key: str, mtime_ns: int, ctime_ns: int, size: int) -> int:
    """A per-file hash, stable across processes; any change of key or stat fields changes it."""
    return ((crc32(key.encode()) | 1) * (mtime_ns + ctime_ns * _K_CTIME + size * _K_SIZE + 1)) & MASK


def files_digest(entries: Iterable[Entry | None]) -> int:
    """Order-independent digest of files (a missing one counts as nothing).

    Same arithmetic as entry_hash, inlined: this runs over every file on the hot paths.
    """
    return (
        sum(
            ((crc32(k.encode()) | 1) * (m + c * _K_CTIME + s * _K_SIZE + 1)) & MASK
            for k, m, c, s in filter(None, entries)
        )
        & MASK
    )


# SQLite primary result codes (sqlite_errorcode & 0xFF) this module tells apart.
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 10, 11, 13, 14, 26


def select_in(db: sqlite3.Connection, sql: str, values: Sequence[object]) -> list[tuple]:
    """sql (its IN list written `{}`) run over values, 900 at a time (SQLite's limit on them)."""
    found: list[tuple] = []
    for start in range(0, len(values), 900):
        chunk = values[start : start + 900]
        found += db.execute(sql.format(", ".join("?" * len(chunk))), chunk).fetchall()
    return found


def _statements(script: str) -> Iterator[str]:
    """script's statements, one by one (a trigger's body holds semicolons of its own)."""
    statement = ""
    for part in script.split(";"):
        statement += part + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                yield statement
            statement = ""


def _code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_contention(error: sqlite3.Error) -> bool:
    """Another process holds the database (busy, locked): the one case worth trying again."""
    code = _code(error)
    if code is not None:
        return code in (_BUSY, _LOCKED)
    text = str(error).lower()
    return "locked" in text or "busy" in text


def cannot_write(error: BaseException) -> bool:
    """The cache's place refuses writes (read-only, full disk, no permission, cannot create)."""
    if isinstance(error, OSError):
        return write_refused(error)
    if not isinstance(error, sqlite3.Error):
        return False
    code = _code(error)
    if code is not None:
        return code in (_PERM, _READONLY, _IOERR, _FULL, _CANTOPEN)
    text = str(error).lower()
    return any(word in text for word in ("readonly", "disk is full", "unable to open", "disk i/o error"))


def is_corrupt(error: sqlite3.DatabaseError) -> bool:
    """Damage (rebuild the cache), as opposed to contention (another process holds a lock) or a
    place that cannot be written."""
    if is_contention(error) or cannot_write(error):
        return False
    if _code(error) in (_CORRUPT, _NOTADB):
        return True
    text = str(error).lower()
    return not isinstance(error, sqlite3.OperationalError) or any(
        word in text for word in ("malformed", "not a database", "corrupt", "vtable constructor", "no such")
    )


def index_failure(error: sqlite3.Error, cache: CacheDB | None) -> AibuddyError:
    """Any other SQLite error: a typed failure naming the cache, never "busy"."""
    where = "" if cache is None or cache.in_memory else f" {cache.path}"
    return AibuddyError(f"the search index{where} failed ({error}); it is only a cache, deleting it is safe")


def rebuild_if_corrupt(attribute: str) -> Callable[[Method], Method]:
    """Run a service method again on a fresh cache if the one in `attribute` is damaged (once),
    or in memory if its place cannot be written; lock contention is a typed "busy" error, any
    other SQLite error a typed failure."""

    def decorate(method: Method) -> Method:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            rebuilt = False
            while True:
                try:
                    return method(self, *args, **kwargs)
                except sqlite3.DatabaseError as error:
                    cache = getattr(self, attribute, None)
                    if is_contention(error):
                        raise Busy(f"the vault's index is busy ({error}); try again") from None
                    if cache is not None and cannot_write(error) and cache.to_memory():
                        continue
                    if cache is not None and is_corrupt(error) and not rebuilt:
                        rebuilt = True
                        cache.discard()
                        continue
                    raise index_failure(error, cache) from None

        return wrapper  # type: ignore[return-value]

    return decorate


class CacheDB:
    """A SQLite file whose tables are declared by `schema` at `version`; subclasses query it."""

    schema = ""
    version = 0
    tables: tuple[str, ...] = ()  # dropped when the version changes
    # Tables a later aibuddy added without a new version (so an upgrade rebuilds nothing), made on
    # opening a cache an earlier one made (IF NOT EXISTS: no lock unless one is missing).
    added: tuple[str, ...] = ()
    busy_timeout = 30.0  # seconds to wait for another process's write before "busy, try again"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.in_memory = False  # set when path's folder cannot be written
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            rebuilt = False
            while self._db is None:
                try:
                    self._db = self._open()
                except (sqlite3.DatabaseError, OSError) as error:
                    # No folder for the file (any OSError) or it refuses writes: memory will do.
                    if (isinstance(error, OSError) or cannot_write(error)) and self.to_memory():
                        continue
                    if not isinstance(error, sqlite3.DatabaseError) or not is_corrupt(error) or rebuilt:
                        raise
                    rebuilt = True
                    self.discard()  # a corrupt cache is rebuilt, never repaired
        return self._db

    def to_memory(self) -> bool:
        """Keep this cache in memory from now on (rebuilt there on next use), because its file
        cannot be written; False if it already is in memory."""
        if self.in_memory:
            return False
        self.close()
        self.in_memory = True
        return True

    def _open(self) -> sqlite3.Connection:
        if self.in_memory:
            db = sqlite3.connect(":memory:", isolation_level=None)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            # A disposable cache: losing the last commits to a power cut only costs a rebuild.
            db.execute("PRAGMA synchronous = NORMAL")
            if db.execute("PRAGMA user_version").fetchone()[0] != self.version:
                db.execute("BEGIN IMMEDIATE")
                if db.execute("PRAGMA user_version").fetchone()[0] != self.version:
                    for table in self.tables:
                        db.execute(f"DROP TABLE IF EXISTS {table}")
                    for statement in _statements(self.schema):
                        db.execute(statement)
                    db.execute(f"PRAGMA user_version = {self.version}")
                db.execute("COMMIT")
            if not self.in_memory and db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                try:
                    db.execute("PRAGMA journal_mode = WAL")
                except sqlite3.OperationalError as error:
                    # The switch needs the file to itself and waits for no one: while another
                    # connection (a server's other thread) reads a new cache, a later open makes it.
                    if not is_contention(error):
                        raise
            db.execute("SELECT value FROM meta LIMIT 1").fetchall()
            for statement in self.added:
                db.execute(statement)
        except BaseException:
            db.close()
            raise
        return db

    def discard(self) -> None:
        """Close and delete the cache file; the next use rebuilds it (in memory if the file
        cannot be deleted)."""
        self.close()
        if self.in_memory:
            return
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass
            except OSError:
                self.in_memory = True
                return

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction; BEGIN IMMEDIATE serialises concurrent writers. The threads of
        this process queue for the file in memory first (store.locks.held): SQLite's own wait for a
        writer sleeps and tries again, up to 100 ms at a time, so it is left to other processes."""
        from .locks import held

        name = None if self.in_memory else f"sqlite:{os.path.abspath(self.path)}"
        with held(name, self.busy_timeout) if name else nullcontext(True) as had:
            if not had:
                raise Busy(f"the vault's index {self.path} is busy; try again")
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                # A full disk or an I/O error may have rolled the transaction back already; the
                # original error is the one to report.
                if self.db.in_transaction:
                    try:
                        self.db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                raise
            self.db.execute("COMMIT")

    def stored_digest(self) -> int | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'digest'").fetchone()
        return None if row is None else row[0] & MASK

    def set_digest(self, value: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('digest', ?)", (to_signed(value),))
