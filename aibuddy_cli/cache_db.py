"""A derived SQLite cache under .aibuddy/: rebuilt when its schema changes or it is corrupt.

Both search indexes build on this. Each keeps a folder digest in its `meta` table: a sum of
per-file hashes of names and stat fields, so "did anything change?" costs one stat per file.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from zlib import crc32

from .errors import Conflict
from .storage import Entry

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


def is_corrupt(error: sqlite3.DatabaseError) -> bool:
    """Damage (rebuild the cache), as opposed to contention (another process holds a lock)."""
    text = str(error).lower()
    if "locked" in text or "busy" in text:
        return False
    return not isinstance(error, sqlite3.OperationalError) or any(
        word in text for word in ("malformed", "not a database", "corrupt", "vtable constructor", "no such")
    )


def rebuild_if_corrupt(attribute: str) -> Callable[[Method], Method]:
    """Run a service method again, once, on a fresh cache if the one in `attribute` is damaged;
    turn lock contention into a typed "busy" error."""

    def decorate(method: Method) -> Method:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except sqlite3.DatabaseError as error:
                cache = getattr(self, attribute, None)
                if not is_corrupt(error):
                    raise Conflict(f"the vault's index is busy ({error}); try again") from None
                if cache is None:
                    raise
                cache.discard()
                return method(self, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


class CacheDB:
    """A SQLite file whose tables are declared by `schema` at `version`; subclasses query it."""

    schema = ""
    version = 0
    tables: tuple[str, ...] = ()  # dropped when the version changes

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self._db = self._open()
            except sqlite3.DatabaseError as error:
                if not is_corrupt(error):
                    raise
                self.discard()  # a corrupt cache is rebuilt, never repaired
                self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout = 30000")
            # A disposable cache: losing the last commits to a power cut only costs a rebuild.
            db.execute("PRAGMA synchronous = NORMAL")
            if db.execute("PRAGMA user_version").fetchone()[0] != self.version:
                db.execute("BEGIN IMMEDIATE")
                if db.execute("PRAGMA user_version").fetchone()[0] != self.version:
                    for table in self.tables:
                        db.execute(f"DROP TABLE IF EXISTS {table}")
                    for statement in self.schema.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.execute(f"PRAGMA user_version = {self.version}")
                db.execute("COMMIT")
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("SELECT value FROM meta LIMIT 1").fetchall()
        except BaseException:
            db.close()
            raise
        return db

    def discard(self) -> None:
        """Close and delete the cache file; the next use rebuilds it."""
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction; BEGIN IMMEDIATE serialises concurrent writers."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def stored_digest(self) -> int | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'digest'").fetchone()
        return None if row is None else row[0] & MASK

    def set_digest(self, value: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('digest', ?)", (to_signed(value),))
