"""The Store protocol (store/files.py) on PostgreSQL: one vault served to many hosts.

`[store] url = "postgresql://…"` (or AIBUDDY_STORE_URL) puts the vault's files (records,
documents and sidecars, tables, tasks, logs) in one table, `aibuddy_files`, keyed by their vault
path; the derived indexes stay on each host. psycopg 3 (`pip install 'aibuddy-cli[postgres]'`) is
imported only by this module, so a file vault's start-up does not change.

- Every write is a transaction: a reader sees the old bytes or the new, never a part. `append`
  adds its lines as a row of their own (`aibuddy_appends`, a newline first when the text does not
  end with one), so a log's append costs the same at 20 MB as at 1 KB; a read puts the file's
  bytes and its appended rows together in one statement, and a `write` folds them away.
- Every change takes the next number of a one-row clock (`aibuddy_clock`) in its transaction.
  Holding that row serialises the writers' commits, so the numbers become visible in order: a
  reader that has seen number N has seen every change up to N. The number is the file's version
  (its Entry's ctime_ns, which the indexes compare) and the position of the change in
  `aibuddy_changes`, from which `changes()` answers the indexes "what changed in this folder
  since" without a scan.
- `lock(name)` is a PostgreSQL advisory lock on a connection of its own: a process killed while
  holding it releases it with its connection.
- A server that cannot be reached is "store unavailable" (exit 4), its URL shown without the
  password.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from ..errors import Busy, Conflict, InvalidInput, NotFound
from .files import Entry, check_key
from .folder_watch import Changes

# Keys and folders compare byte by byte (COLLATE "C"): a folder's files are then one range of the
# index (key >= 'memory/' AND key < 'memory0'), whatever the database's collation.
SCHEMA = """
CREATE TABLE IF NOT EXISTS aibuddy_files (
    key TEXT COLLATE "C" PRIMARY KEY,
    folder TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    data BYTEA NOT NULL,
    version BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    appended BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS aibuddy_files_by_folder ON aibuddy_files (folder, name);
CREATE TABLE IF NOT EXISTS aibuddy_clock (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    seq BIGINT NOT NULL,
    epoch TEXT NOT NULL DEFAULT md5(random()::text || clock_timestamp()::text),
    schema INTEGER NOT NULL DEFAULT 1
);
INSERT INTO aibuddy_clock (id, seq, schema) VALUES (0, 0, 2) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS aibuddy_changes (seq BIGINT PRIMARY KEY, folder TEXT NOT NULL, name TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS aibuddy_changes_by_folder ON aibuddy_changes (folder, seq);
"""
# The lines appended to a file since it was last written whole, a row each (seq: the clock's).
APPENDS = """
CREATE TABLE IF NOT EXISTS aibuddy_appends (
    key TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (key, seq)
);
"""
SCHEMA += APPENDS
SCHEMA_VERSION = 2  # aibuddy_clock.schema: a host refuses a database a newer release has changed
# A database the first release made has no appended rows and no schema number: they are added with
# the clock's table held first (the writers' lock order; the row alone would deadlock with a writer
# queued for it, since altering the table needs all of it).
UPGRADE_1 = (
    "LOCK TABLE aibuddy_clock IN ACCESS EXCLUSIVE MODE;"
    " ALTER TABLE aibuddy_files ADD COLUMN IF NOT EXISTS appended BIGINT NOT NULL DEFAULT 0;"
    " ALTER TABLE aibuddy_clock ADD COLUMN IF NOT EXISTS schema INTEGER NOT NULL DEFAULT 1;"
    " UPDATE aibuddy_clock SET schema = 2 WHERE id = 0;" + APPENDS
)
# The file's whole bytes, in one statement (one snapshot): its row's, then its appended rows'.
WHOLE = (
    "CASE WHEN appended = 0 THEN data ELSE data || (SELECT string_agg(a.data, ''::bytea ORDER BY a.seq)"
    " FROM aibuddy_appends a WHERE a.key = aibuddy_files.key) END"
)
SOURCE = "pg-"  # the cursors' source (store.folder_watch.Changes): pg-<the database's epoch>
# Every connection's own limits: a process stopped in the middle of a transaction (SIGSTOP, a
# network cut) loses it after a minute instead of holding the clock, and so every writer of every
# host, for ever; a writer waits at most 30 s for the clock, then is told busy.
# plan_cache_mode: psycopg prepares a statement run five times, and PostgreSQL then settles on a
# generic plan, blind to the values: for a write's place check (a key, its parents, the keys under
# it) that is a scan of every file (15-20 ms at 100,000 records, against 0.1 ms planned for them).
SESSION = (
    "SET idle_in_transaction_session_timeout = '60s'; SET lock_timeout = '30s';"
    " SET plan_cache_mode = force_custom_plan"
)
CLOCK = "SELECT 1 FROM aibuddy_clock WHERE id = 0 FOR UPDATE"


class StoreUnavailable(Busy):
    """The database cannot be reached: retryable, exit 4."""


_SCHEMA_READY: set[str] = set()  # URLs whose tables this process has already created


# A URL's password: user:password@ before the host, or a ?password= parameter (any characters,
# even ones a URL may not hold: a malformed URL is shown without it too).
_PASSWORD = re.compile(r"^([a-z]+://[^:/@?#]*:)([^@/?#]*)(?=@)|(?i:([?&]password=))([^&#]*)")


def shown(url: str) -> str:
    """url without its password (messages never carry one)."""
    return _PASSWORD.sub(lambda found: f"{found[1] or found[3]}***", url)


def hidden(url: str, text: str) -> str:
    """text (a driver's message about url) without url's password, however it is spelled there."""
    from urllib.parse import unquote

    text = text.replace(url, shown(url))
    for found in _PASSWORD.finditer(url):
        secret = found[2] or found[4] or ""
        for spelling in {secret, unquote(secret)} - {""}:
            text = text.replace(spelling, "***")
    return text


def _split(key: str) -> tuple[str, str]:
    folder, _, name = key.rpartition("/")
    return folder, name


def _under(prefix: str) -> tuple[str, str]:
    """The range of keys under the folder prefix: from 'prefix/' up to 'prefix0' ('0' follows '/')."""
    return prefix + "/", prefix + "0"


class PgStore:
    """Store over a PostgreSQL database (see the module's docstring)."""

    def __init__(self, url: str, connect_timeout: float = 5.0) -> None:
        self.url = url
        self.connect_timeout = connect_timeout
        self._local = threading.local()  # one connection per thread (psycopg connections are not shared)

    # --- connections ---------------------------------------------------------------------

    def _connect(self) -> Any:
        try:
            import psycopg
        except ImportError:
            raise InvalidInput(
                "[store] url is a PostgreSQL URL, which needs psycopg: pip install 'aibuddy-cli[postgres]'"
            ) from None
        try:
            given = "connect_timeout=" in self.url  # the URL's own bound wins
            timeout: dict[str, Any] = {} if given else {"connect_timeout": max(1, int(self.connect_timeout))}
            connection = psycopg.connect(self.url, autocommit=True, **timeout)
            connection.execute(SESSION)
        except psycopg.Error as error:
            reason = self._reason(error)
            if isinstance(error, psycopg.ProgrammingError):  # libpq could not read the URL
                raise InvalidInput(f"not a PostgreSQL URL libpq reads: {shown(self.url)}: {reason}") from None
            raise StoreUnavailable(f"store unavailable: {shown(self.url)}: {reason}") from None
        if self.url not in _SCHEMA_READY:
            # DDL on tables in use would lock them against the writers (CREATE INDEX IF NOT EXISTS
            # takes its lock before it looks) and could deadlock with them: it runs only while the
            # schema is missing or old, and by one process at a time (looking again once it is its
            # turn).
            def made() -> int:
                """0: no schema; 1: the first release's (no appended rows); else its number."""
                found = "SELECT to_regclass('aibuddy_changes_by_folder'), to_regclass('aibuddy_appends')"
                changes, appends = connection.execute(found).fetchall()[0]
                if appends is None:
                    return 0 if changes is None else 1
                (number,) = connection.execute("SELECT schema FROM aibuddy_clock WHERE id = 0").fetchall()[0]
                return int(number)

            now = made()
            if now < SCHEMA_VERSION:
                connection.execute("SELECT pg_advisory_lock(hashtextextended('aibuddy schema', 0))")
                try:
                    now = made()
                    if now < SCHEMA_VERSION:
                        connection.execute(SCHEMA if now == 0 else UPGRADE_1)
                        now = SCHEMA_VERSION
                finally:
                    connection.execute("SELECT pg_advisory_unlock(hashtextextended('aibuddy schema', 0))")
            if now > SCHEMA_VERSION:
                connection.close()
                raise InvalidInput(
                    f"{shown(self.url)} was changed by a newer aibuddy (its schema {now}, this one knows"
                    f" {SCHEMA_VERSION}): upgrade aibuddy on this host"
                )
            _SCHEMA_READY.add(self.url)
        return connection

    @property
    def db(self) -> Any:
        connection = getattr(self._local, "connection", None)
        if connection is None or connection.closed:
            connection = self._local.connection = self._connect()
        return connection

    def _reason(self, error: Exception) -> str:
        """A driver's error in one line, without the URL's password."""
        text = str(error).strip()
        return hidden(self.url, text.splitlines()[0]) if text else type(error).__name__

    def _failure(self, error: Exception) -> Busy:
        """What a psycopg OperationalError tells the caller: busy when a write waited too long for
        the clock, else the store is unavailable (and this thread's connection is dropped)."""
        import psycopg

        if isinstance(error, psycopg.errors.LockNotAvailable):
            return Busy("the vault is busy (a write waited 30 s for another host's); try again")
        self._local.connection = None
        return StoreUnavailable(f"store unavailable: {shown(self.url)}: {self._reason(error)}")

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        import psycopg

        try:
            with ExitStack() as stack:
                db = self._begin(stack)
                self._check_held(db)  # (before the clock: every writer waits while one holds it)
                # Every writer takes the clock row first: one lock order, so writers queue, never deadlock.
                db.execute(CLOCK)
                yield db
        except psycopg.OperationalError as error:
            raise self._failure(error) from None

    def _begin(self, stack: ExitStack) -> Any:
        """This thread's connection in a new transaction (on stack). A connection the server ended
        since its last use (a restart, an idle timeout) is replaced once: nothing was sent yet."""
        import psycopg

        connection = self.db
        try:
            stack.enter_context(connection.transaction())
        except psycopg.OperationalError:
            if not connection.broken:
                raise
            self._local.connection = None
            connection = self.db
            stack.enter_context(connection.transaction())
        return connection

    def _check_held(self, db: Any) -> None:
        """Refuse to write under a lock this thread no longer holds: the session that held it
        ended (a restart, a cut connection) and another host may hold it now."""
        held = self._local.__dict__.get("held")
        if not held:
            return
        locks = getattr(self._local, "locks", None)
        if locks is not None and not locks.closed:
            mine = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = %s"
            if db.execute(mine, (locks.info.backend_pid,)).fetchall()[0][0] >= len(held):
                return
        raise Busy(f"the vault's lock on {sorted(held)[0]} was lost (its database session ended); try again")

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """A read; on a connection the server ended since its last use, once more on a new one."""
        import psycopg

        connection = self.db
        try:
            return list(connection.execute(sql, params).fetchall())
        except psycopg.OperationalError as error:
            if not connection.broken:
                raise self._failure(error) from None
        self._local.connection = None
        try:
            return list(self.db.execute(sql, params).fetchall())
        except psycopg.OperationalError as error:
            raise self._failure(error) from None

    def summary(self) -> str:
        """What `doctor` says of the database: the server, the files it holds, its change clock."""
        version = self._query("SHOW server_version")[0][0]
        files = self._query("SELECT count(*) FROM aibuddy_files")[0][0]
        seq = self._query("SELECT seq FROM aibuddy_clock WHERE id = 0")[0][0]
        return f"{shown(self.url)}: PostgreSQL {version.split()[0]}, {files} file(s), {seq} change(s) so far"

    @staticmethod
    def _check_place(db: Any, key: str, folder_is: type[Conflict] | None = None) -> None:
        """Refuse a file where a folder is (folder_is: the error to raise then, else InvalidInput)
        or under a file, as a file system does (inside the writer's transaction)."""
        parents = [key[:at] for at, char in enumerate(key) if char == "/"]
        found = db.execute(
            "SELECT key FROM aibuddy_files WHERE key = ANY(%s) OR (key >= %s AND key < %s) LIMIT 1",
            (parents, *_under(key)),
        ).fetchall()
        if not found:
            return
        if found[0][0] in parents:
            raise InvalidInput(f"{found[0][0]} is a file, so {key} cannot be made under it")
        if folder_is is not None:
            raise folder_is(f"{key} already exists (a folder)")
        raise InvalidInput(f"{key} is a folder, not a file")

    @staticmethod
    def _tick(db: Any, key: str) -> int:
        """The next number of the clock, and the change it records (inside a transaction)."""
        seq = db.execute("UPDATE aibuddy_clock SET seq = seq + 1 WHERE id = 0 RETURNING seq").fetchone()[0]
        folder, name = _split(key)
        db.execute("INSERT INTO aibuddy_changes (seq, folder, name) VALUES (%s, %s, %s)", (seq, folder, name))
        return int(seq)

    # --- reading ---------------------------------------------------------------------------

    def scan(self, prefix: str, suffix: str | tuple[str, ...]) -> list[Entry]:
        check_key(prefix)
        rows = self._query(
            "SELECT key, name, mtime_ns, version, octet_length(data) + appended FROM aibuddy_files"
            " WHERE folder = %s ORDER BY name",
            (prefix,),
        )
        return [
            Entry(key, mtime, version, size)
            for key, name, mtime, version, size in rows
            if not name.startswith(".") and name.endswith(suffix)
        ]

    def folders(self, prefix: str) -> list[str]:
        check_key(prefix)
        rows = self._query(
            "SELECT DISTINCT split_part(substr(folder, %s), '/', 1) FROM aibuddy_files"
            " WHERE folder >= %s AND folder < %s",
            (len(prefix) + 2, *_under(prefix)),
        )
        return sorted(name for (name,) in rows if name and not name.startswith("."))

    def walk(self, prefix: str) -> list[str]:
        """Every file's key under prefix at any depth, hidden names included, sorted."""
        check_key(prefix)
        rows = self._query(
            "SELECT key FROM aibuddy_files WHERE key >= %s AND key < %s ORDER BY key", _under(prefix)
        )
        return [key for (key,) in rows]

    def _is_folder(self, key: str) -> bool:
        return bool(
            self._query("SELECT 1 FROM aibuddy_files WHERE key >= %s AND key < %s LIMIT 1", _under(key))
        )

    def read(self, key: str) -> tuple[bytes, Entry]:
        check_key(key)
        rows = self._query(f"SELECT {WHOLE}, mtime_ns, version FROM aibuddy_files WHERE key = %s", (key,))
        if not rows:
            if self._is_folder(key):
                raise InvalidInput(f"{key} is a folder, not a file")
            raise NotFound(f"{key} not found")
        data, mtime, version = rows[0]
        data = bytes(data)
        return data, Entry(key, mtime, version, len(data))

    def read_many(self, keys: Iterable[str]) -> dict[str, tuple[bytes, Entry]]:
        """The files among keys in one query (a host catching up with many changes)."""
        wanted = [check_key(key) for key in keys]
        if not wanted:
            return {}
        rows = self._query(
            f"SELECT key, {WHOLE}, mtime_ns, version FROM aibuddy_files WHERE key = ANY(%s)", (wanted,)
        )
        return {
            key: (bytes(data), Entry(key, mtime, version, len(data))) for key, data, mtime, version in rows
        }

    def stat(self, key: str) -> Entry:
        check_key(key)
        rows = self._query(
            "SELECT mtime_ns, version, octet_length(data) + appended FROM aibuddy_files WHERE key = %s",
            (key,),
        )
        if not rows:
            raise NotFound(f"{key} not found")
        mtime, version, size = rows[0]
        return Entry(key, mtime, version, size)

    def exists(self, key: str) -> bool:
        check_key(key)
        return bool(
            self._query(
                "SELECT 1 FROM aibuddy_files WHERE key = %s OR (key >= %s AND key < %s) LIMIT 1",
                (key, *_under(key)),
            )
        )

    def changes(self, prefix: str, since: Collection[str]) -> Changes:
        """What changed directly in prefix since this database's cursor among since."""
        check_key(prefix)
        now, epoch = self._query("SELECT seq, epoch FROM aibuddy_clock WHERE id = 0")[0]
        source = SOURCE + epoch  # a database made anew at the same URL is another source: scan
        cursor = f"{source}.{now}"
        own = next((c for c in since if c.split(".", 1)[0] == source), None)
        if own is None or not own.split(".", 1)[1].isdigit():
            return Changes(cursor, None)
        start = int(own.split(".", 1)[1])
        if start > now:  # a database restored from an older copy: look again at everything
            return Changes(cursor, None)
        rows = self._query(
            "SELECT DISTINCT name FROM aibuddy_changes WHERE folder = %s AND seq > %s AND seq <= %s",
            (prefix, start, now),
        )
        return Changes(cursor, frozenset(name for (name,) in rows if not name.startswith(".")))

    # --- writing ----------------------------------------------------------------------------

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        check_key(key)
        folder, name = _split(key)
        now = time.time_ns()
        with self._transaction() as db:
            if (
                create
                and db.execute("SELECT 1 FROM aibuddy_files WHERE key = %s FOR UPDATE", (key,)).fetchone()
            ):
                raise Conflict(f"{key} already exists")
            self._check_place(db, key)
            version = self._tick(db, key)
            db.execute("DELETE FROM aibuddy_appends WHERE key = %s", (key,))
            db.execute(
                "INSERT INTO aibuddy_files (key, folder, name, data, version, mtime_ns)"
                " VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, version = EXCLUDED.version,"
                " mtime_ns = EXCLUDED.mtime_ns, appended = 0",
                (key, folder, name, data, version, now),
            )
        return Entry(key, now, version, len(data))

    def append(self, key: str, data: bytes) -> None:
        check_key(key)
        folder, name = _split(key)
        with self._transaction() as db:
            version = self._tick(db, key)
            now = time.time_ns()
            there = db.execute(
                "SELECT octet_length(data), appended FROM aibuddy_files WHERE key = %s", (key,)
            ).fetchone()
            if there is None:  # (rows a first-release host's delete left behind are not this file's)
                self._check_place(db, key)
                db.execute("DELETE FROM aibuddy_appends WHERE key = %s", (key,))
                db.execute(
                    "INSERT INTO aibuddy_files (key, folder, name, data, version, mtime_ns)"
                    " VALUES (%s, %s, %s, %s, %s, %s)",
                    (key, folder, name, data, version, now),
                )
                return
            size, appended = there
            # The last byte: of the last appended row, else of the file's own (read once per write).
            last = (
                "SELECT get_byte(data, octet_length(data) - 1) FROM aibuddy_appends"
                " WHERE key = %s AND octet_length(data) > 0 ORDER BY seq DESC LIMIT 1"
                if appended
                else "SELECT get_byte(data, octet_length(data) - 1) FROM aibuddy_files WHERE key = %s"
            )
            ends_a_line = size + appended == 0 or db.execute(last, (key,)).fetchone()[0] == 10
            lines = data if ends_a_line else b"\n" + data
            if lines:
                db.execute(
                    "INSERT INTO aibuddy_appends (key, seq, data) VALUES (%s, %s, %s)", (key, version, lines)
                )
            db.execute(
                "UPDATE aibuddy_files SET appended = appended + %s, version = %s, mtime_ns = %s"
                " WHERE key = %s",
                (len(lines), version, now, key),
            )

    def move(self, key: str, new_key: str) -> None:
        self._rename(key, new_key, over=False)

    def replace(self, key: str, new_key: str) -> None:
        self._rename(key, new_key, over=True)

    def _rename(self, key: str, new_key: str, *, over: bool) -> None:
        check_key(key)
        check_key(new_key)
        folder, name = _split(new_key)
        if key == new_key:  # onto itself: a move finds it there, a replace leaves it as it is
            self.stat(key)
            if not over:
                raise Conflict(f"{new_key} already exists")
            return
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM aibuddy_files WHERE key = %s FOR UPDATE", (new_key,)).fetchone():
                if not over:
                    raise Conflict(f"{new_key} already exists")
                db.execute("DELETE FROM aibuddy_files WHERE key = %s", (new_key,))
                db.execute("DELETE FROM aibuddy_appends WHERE key = %s", (new_key,))
            else:
                self._check_place(db, new_key, folder_is=None if over else Conflict)
            self._tick(db, key)
            version = self._tick(db, new_key)
            moved = db.execute(
                "UPDATE aibuddy_files SET key = %s, folder = %s, name = %s, version = %s, mtime_ns = %s"
                " WHERE key = %s",
                (new_key, folder, name, version, time.time_ns(), key),
            ).rowcount
            if not moved:
                raise NotFound(f"{key} not found")
            db.execute("UPDATE aibuddy_appends SET key = %s WHERE key = %s", (new_key, key))

    def delete(self, key: str) -> None:
        check_key(key)
        # A key that is not there is told without queueing for the clock (a save deletes a record's
        # history file that is mostly absent).
        there = bool(self._query("SELECT 1 FROM aibuddy_files WHERE key = %s", (key,)))
        deleted = there and self._delete(key)
        if not deleted:
            if self._is_folder(key):
                raise InvalidInput(f"{key} is a folder, not a file")
            raise NotFound(f"{key} not found")

    def _delete(self, key: str) -> bool:
        with self._transaction() as db:
            if not db.execute("DELETE FROM aibuddy_files WHERE key = %s", (key,)).rowcount:
                return False  # deleted by another writer meanwhile
            db.execute("DELETE FROM aibuddy_appends WHERE key = %s", (key,))
            self._tick(db, key)
        return True

    @contextmanager
    def lock(self, name: str, timeout: float = 30.0) -> Iterator[None]:
        """An advisory lock, held by this thread's lock connection (kept apart from its transactions,
        and from one lock to the next): a process that dies releases it with its connections.
        A writer waits in the server's lock queue (`lock_timeout` its deadline), never polling.
        Not reentrant, as the protocol says (PostgreSQL's session locks are): a thread asking again
        for a lock it holds is told Busy at once."""
        check_key(name)
        held: set[str] = self._local.__dict__.setdefault("held", set())
        if name in held:
            raise Busy(f"the vault is busy ({name} is already held by this thread); try again")
        import psycopg

        connection = getattr(self._local, "locks", None)
        if connection is None or connection.closed:
            connection = self._local.locks = self._connect()
        key = (name,)
        take = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
        try:
            try:
                got = connection.execute(take, key).fetchone()[0]
            except psycopg.OperationalError:
                # A lock connection the server ended since its last use (a restart) is replaced,
                # unless this thread holds a lock on it: that one is lost (writes say so).
                if held or not connection.broken:
                    raise
                connection = self._local.locks = self._connect()
                got = connection.execute(take, key).fetchone()[0]
            if not got and timeout > 0:  # wait in the server's lock queue (it wakes us), up to timeout
                connection.execute(f"SET lock_timeout = {max(1, round(timeout * 1000))}")
                try:
                    connection.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", key)
                    got = True
                except psycopg.errors.LockNotAvailable:
                    pass
            if not got:
                raise Busy(f"the vault is busy ({name} locked for {timeout:.0f}s); try again")
        except psycopg.OperationalError as error:
            self._local.locks = None
            raise StoreUnavailable(
                f"store unavailable: {shown(self.url)}: {self._reason(error)}"
            ) from None
        held.add(name)
        try:
            yield
        finally:
            held.discard(name)
            try:
                connection.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", key)
            except psycopg.Error:  # the connection is gone, and the lock with it
                self._local.locks = None


_STORES: dict[str, PgStore] = {}


def shared_store(url: str) -> PgStore:
    """The process's store for url: its connections are kept from session to session."""
    if url not in _STORES:
        _STORES[url] = PgStore(url)
    return _STORES[url]
