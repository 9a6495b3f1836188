"""The narrow store the services write through, and its filesystem implementation.

Keys are relative POSIX paths inside the vault ("memory/demo/x.md"). The filesystem store
refuses keys that could leave the vault (absolute, "..", symlinks on the way) and writes
atomically (temp file in the same folder, fsync, rename), so a reader never sees half a file.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import NamedTuple, NoReturn, Protocol

from ..errors import Busy, Conflict, InvalidInput, NotFound
from .folder_watch import UNKNOWN, Changes, Watch

TEMP_PREFIX = ".aibuddy-tmp-"
# A temp file older than this was left by a killed write: no write takes a minute, and age also
# covers a reused pid and a writer on another machine sharing the folder.
STALE_TEMP_SECONDS = 60.0
# A temp file whose process is gone is stale once it is this old. Not at once: a pid names a
# process on this machine only, and a writer elsewhere on a shared folder holds its file briefly.
DEAD_WRITER_GRACE_SECONDS = 5.0


class Entry(NamedTuple):
    """One stored file: its key and the stat fields a cache needs to notice a change.

    A NamedTuple because a scan builds one per file, 10,000 for a large memory folder.
    """

    key: str
    mtime_ns: int
    ctime_ns: int
    size: int

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def signature(self) -> tuple[int, int, int]:
        return (self.mtime_ns, self.ctime_ns, self.size)


class Store(Protocol):
    """The narrow contract every service reads and writes the vault through: a database or an
    object store would implement only this (tests/memory_store.py is a second implementation, and
    the service tests run against both).

    Keys are relative POSIX paths ("memory/demo/tea.md"), checked by `check_key`; a folder is a
    key prefix. An implementation must:
    - `scan(prefix, suffix)`: list the files directly in prefix whose names end with suffix (or
      one of several), hidden names (starting with '.') left out; missing prefix → [].
    - `folders(prefix)`: the sorted names of the sub-folders directly in prefix.
    - `read(key)`: the bytes and their Entry; NotFound if absent; InvalidInput if key names a
      folder or something that must not be followed (a symlink).
    - `read_many(keys)`: read's answer for each of keys it would give one for, in one go where the
      store can (a database: one query); keys absent or refused are left out (read one of them to
      learn why).
    - `stat(key)`: the Entry (NotFound if absent). An Entry's (mtime_ns, ctime_ns, size) changes
      whenever the content does: the derived indexes rely on it to notice edits.
    - `write(key, data, create=False)`: replace atomically (a reader sees the old or the new bytes,
      never a mix); with create=True, Conflict if the key exists. Returns the new Entry.
    - `append(key, data)`: add data at the end (logs, one line or more), creating the key, on a
      line of its own (a newline first when the file does not end with one); concurrent appends
      never interleave.
    - `move(key, new_key)`: rename, Conflict if new_key exists; `replace(key, new_key)`: rename
      over it. NotFound if key is absent.
    - No write, append, move or replace makes a file where a folder is or under a file (refused
      with InvalidInput, Conflict or the file system's OSError).
    - `delete(key)`: NotFound if absent. `exists(key)`: whether anything is there.
    - `lock(name, timeout)`: an exclusive lock shared by every process using the vault, not
      reentrant; Busy when it is not free within timeout.
    - `changes(prefix, since)`: the names of the files in prefix changed since its cursor among `since`
      that an earlier answer gave, and the cursor to pass next time (store.folder_watch.Changes); a
      store that cannot tell answers `UNKNOWN`, and the caller scans.
    Failures the storage itself meets (read-only, full) are OSError with the errno and the path.
    """

    def scan(self, prefix: str, suffix: str | tuple[str, ...]) -> list[Entry]: ...

    def folders(self, prefix: str) -> list[str]: ...

    def read(self, key: str) -> tuple[bytes, Entry]: ...

    def read_many(self, keys: Iterable[str]) -> dict[str, tuple[bytes, Entry]]: ...

    def move(self, key: str, new_key: str) -> None: ...

    def replace(self, key: str, new_key: str) -> None: ...

    def stat(self, key: str) -> Entry: ...

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry: ...

    def delete(self, key: str) -> None: ...

    def append(self, key: str, data: bytes) -> None: ...

    def exists(self, key: str) -> bool: ...

    def lock(self, name: str, timeout: float = 30.0) -> AbstractContextManager[None]: ...

    def changes(self, prefix: str, since: Collection[str]) -> Changes: ...


class WalkableStore(Store, Protocol):
    """A store that can list every file under a folder at any depth (FileStore, PgStore)."""

    def walk(self, prefix: str) -> list[str]:
        """Every file's key under prefix at any depth, hidden names included, sorted."""
        ...


def check_key(key: str) -> str:
    """Refuse keys that are not plain relative paths inside the vault."""
    if not key or "\\" in key or "\x00" in key or key.startswith("/"):
        raise InvalidInput(f"invalid path {key!r}")
    parts = key.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidInput(f"invalid path {key!r}")
    return key


def read_each(store: Store, keys: Iterable[str]) -> dict[str, tuple[bytes, Entry]]:
    """`read_many` one key at a time, for a store with nothing faster."""
    found: dict[str, tuple[bytes, Entry]] = {}
    for key in [check_key(key) for key in keys]:  # a key that is no path is refused, not left out
        try:
            found[key] = store.read(key)
        except (NotFound, InvalidInput, OSError):
            continue
    return found


def _entry(key: str, st: os.stat_result) -> Entry:
    return Entry(key, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _create_temp(folder: Path) -> tuple[int, Path]:
    """A new, exclusive temp file in folder (what tempfile.mkstemp does, without its import cost)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        temp = folder / f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        try:
            return os.open(temp, flags, 0o600), temp
        except FileExistsError:
            continue


def _naming(error: OSError, path: Path) -> OSError:
    """error about path (a failed write names the file meant, not its temp file or nothing)."""
    if error.errno is None:
        return error
    return OSError(error.errno, error.strerror, str(path))


def atomic_write(path: Path, data: bytes) -> None:
    """Replace path with data so that readers see the old or the new file, never a mix.

    Temp file in the same folder, fsync, then rename; the file keeps its permissions. A failure
    (read-only file system, full disk) is an OSError naming path.
    """
    made = _make_folders(path.parent)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    try:
        fd, temp = _create_temp(path.parent)
    except OSError as exc:
        _remove_empty(made)
        raise _naming(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass  # gone already, or left for the next write to this folder to sweep
        _remove_empty(made)
        if isinstance(exc, OSError):
            raise _naming(exc, path) from exc
        raise


def _make_folders(folder: Path) -> list[Path]:
    """mkdir -p, returning the folders it made, deepest first (for _remove_empty)."""
    missing = []
    while not folder.is_dir() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    try:
        for made in reversed(missing):
            made.mkdir(exist_ok=True)
    except OSError:
        _remove_empty(missing)
        raise
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """A failed write leaves no folder it made behind (a task folder with no task.json would be
    listed as a damaged task); one another writer has filled meanwhile stays."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _alive(pid: int) -> bool:
    """Whether a process with this pid runs on this machine (unsure counts as alive)."""
    if os.name != "posix":  # os.kill(pid, 0) would send a Ctrl-C on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process, or not a pid at all
        return True
    return True


def _stale_temp(name: str, age: float) -> bool:
    if age > STALE_TEMP_SECONDS:
        return True
    pid = name[len(TEMP_PREFIX) :].split("-", 1)[0]
    if not pid.isdigit() or int(pid) <= 0 or int(pid) == os.getpid():
        return False
    return age > DEAD_WRITER_GRACE_SECONDS and not _alive(int(pid))


def sweep_stale_temps(folder: Path, names: Iterable[str] | None = None) -> list[str]:
    """Delete the temp files killed writes left in folder: their process is gone, or they are
    older than a minute. A concurrent writer's live temp file is kept. Best effort, never raises.

    names: the temp file names a listing of folder already found (saves listing it again).
    Returns the names deleted.
    """
    if names is None:
        try:
            with os.scandir(folder) as iterator:
                names = [item.name for item in iterator if item.name.startswith(TEMP_PREFIX)]
        except OSError:
            return []
    removed: list[str] = []
    now = time.time()
    for name in names:
        try:
            st = os.stat(folder / name, follow_symlinks=False)
            if S_ISREG(st.st_mode) and _stale_temp(name, now - st.st_mtime):
                os.unlink(folder / name)
                removed.append(name)
        except OSError:
            continue
    return removed


class FileStore:
    """Store over a folder on disk; with a watch (a long-lived process), it can tell what changed
    in a folder without scanning it."""

    def __init__(self, root: Path, locks_dir: Path, watch: Watch | None = None) -> None:
        self.root = root.resolve()
        self.locks_dir = locks_dir
        self.watch = watch
        self._temps_seen: dict[str, list[str]] = {}  # folder -> temp files its last scan saw
        self._swept: dict[str, float] = {}  # folder -> when a write last swept it (monotonic)
        self._lock_refusals: list[OSError] = []  # why the locks held now could not be taken

    def path(self, key: str) -> Path:
        """The on-disk path of key, refusing any symlink between the vault root and the file."""
        check_key(key)
        probe = str(self.root)
        for part in key.split("/"):  # (strings, not Path objects: every read and write comes here)
            probe = f"{probe}/{part}"
            try:
                symlink = S_ISLNK(os.lstat(probe).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                break  # what does not exist is no symlink, and neither is anything under it
            if symlink:
                where = probe[len(str(self.root)) + 1 :]
                raise InvalidInput(f"refusing {key}: {where} is a symlink")
        return self.root / key

    def scan(self, prefix: str, suffix: str | tuple[str, ...]) -> list[Entry]:
        """Regular files directly in prefix whose name ends with suffix, or one of several
        (hidden files skipped).

        Symlinks are listed too, so that reading them is refused and reported, not skipped.
        This loop runs over every record on the hot path, hence its plain style.
        """
        folder = self.path(prefix)
        entries: list[Entry] = []
        append = entries.append
        base = f"{prefix}/"
        temps: list[str] = []
        try:
            iterator = os.scandir(folder)
        except FileNotFoundError:
            return entries
        with iterator:
            for item in iterator:
                name = item.name
                if name[0] == ".":
                    if name.startswith(TEMP_PREFIX):
                        temps.append(name)
                    continue
                if not name.endswith(suffix):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed since the folder was listed
                    continue
                if S_ISREG(st.st_mode) or S_ISLNK(st.st_mode):
                    append(Entry(base + name, st.st_mtime_ns, st.st_ctime_ns, st.st_size))
        self._temps_seen[str(folder)] = temps
        if self.watch is not None:
            self.watch.scanned(folder, len(entries))
        return entries

    def changes(self, prefix: str, since: Collection[str]) -> Changes:
        if self.watch is None:
            return UNKNOWN
        folder = self.path(prefix)
        answer = self.watch.changes(folder, since)
        if answer.names is not None:
            # The watch answered: this process will not list the folder, so a write here sweeps no
            # temp files (the watch never logs hidden ones) rather than listing it for them; a
            # killed writer's temp file waits, hidden, for the next process that walks the folder.
            self._temps_seen.setdefault(str(folder), [])
        return answer

    def folders(self, prefix: str) -> list[str]:
        """Names of the sub-folders directly in prefix (hidden ones and symlinks skipped)."""
        try:
            # A POSIX folder has 2 links and one more for each sub-folder: with 2, it has none, and
            # 100,000 records are not listed for them (filesystems that count no links say 1).
            if os.stat(self.path(prefix)).st_nlink == 2:
                return []
            with os.scandir(self.path(prefix)) as iterator:
                return sorted(
                    item.name
                    for item in iterator
                    if item.name[0] != "." and item.is_dir(follow_symlinks=False)
                )
        except FileNotFoundError:
            return []

    def walk(self, prefix: str) -> list[str]:
        """Every file's key under prefix at any depth, hidden names included (not the temp files
        of writes in progress), sorted. A symlink is listed, not followed, so that reading it is
        refused and reported."""
        keys: list[str] = []
        for folder, subfolders, names in os.walk(self.path(prefix)):
            links = [name for name in subfolders if os.path.islink(os.path.join(folder, name))]
            subfolders[:] = [name for name in subfolders if name not in links]
            base = Path(folder).relative_to(self.root).as_posix()
            keys.extend(f"{base}/{name}" for name in names + links if not name.startswith(TEMP_PREFIX))
        return sorted(keys)

    def stat(self, key: str) -> Entry:
        try:
            return _entry(key, os.stat(self.path(key), follow_symlinks=False))
        except FileNotFoundError:
            raise NotFound(f"{key} not found") from None

    def move(self, key: str, new_key: str) -> None:
        """Rename a file within the vault (atomic on one filesystem); the target must not exist."""
        if os.path.lexists(self.path(new_key)):
            raise Conflict(f"{new_key} already exists")
        self.replace(key, new_key)

    def replace(self, key: str, new_key: str) -> None:
        """Rename a file within the vault over whatever new_key holds (atomic on one filesystem)."""
        source, target = self.path(key), self.path(new_key)
        self._check_lock()
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(source, target)
        except FileNotFoundError:
            raise NotFound(f"{key} not found") from None

    def read_many(self, keys: Iterable[str]) -> dict[str, tuple[bytes, Entry]]:
        """read_each, for many files of few folders (an index build) at a third of the cost: each
        folder is checked for symlinks once (`path`) and opened, and its files are opened in it,
        never through a symlink. A file that cannot be read so is left out, as by read_each."""
        wanted = [check_key(key) for key in keys]  # a key that is no path is refused, not left out
        if os.open not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
            return read_each(self, wanted)
        found: dict[str, tuple[bytes, Entry]] = {}
        folders: dict[str, int | None] = {}
        nofollow = getattr(os, "O_NOFOLLOW", 0)
        try:
            for key in wanted:
                parent, _, name = key.rpartition("/")
                if parent not in folders:
                    try:
                        where = self.path(parent) if parent else self.root
                        folders[parent] = os.open(where, os.O_RDONLY | os.O_DIRECTORY | nofollow)
                    except (InvalidInput, OSError):
                        folders[parent] = None
                folder = folders[parent]
                if folder is None:
                    continue
                try:
                    fd = os.open(name, os.O_RDONLY | nofollow, dir_fd=folder)
                except OSError:
                    continue
                try:
                    st = os.fstat(fd)
                    if not S_ISREG(st.st_mode):
                        continue
                    parts = [os.read(fd, st.st_size + 1)]
                    while parts[-1]:  # until the end, as read() reads a file that grew meanwhile
                        parts.append(os.read(fd, 1 << 16))
                except OSError:
                    continue
                finally:
                    os.close(fd)
                found[key] = b"".join(parts), _entry(key, st)
        finally:
            for folder in folders.values():
                if folder is not None:
                    os.close(folder)
        return found

    def read(self, key: str) -> tuple[bytes, Entry]:
        path = self.path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            raise NotFound(f"{key} not found") from None
        except IsADirectoryError:
            raise InvalidInput(f"{key} is a folder, not a file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InvalidInput(f"refusing {key}: it is a symlink") from None
            raise
        st = os.fstat(fd)
        if not S_ISREG(st.st_mode):  # a folder (or a device) where a file should be
            os.close(fd)
            kind = "a folder" if S_ISDIR(st.st_mode) else "not a regular file"
            raise InvalidInput(f"{key} is {kind}, not a file")
        with os.fdopen(fd, "rb") as handle:
            return handle.read(), _entry(key, st)

    def exists(self, key: str) -> bool:
        return os.path.lexists(self.path(key))

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        """Write atomically; with create=True refuse to replace an existing file.

        Callers that check-then-create hold the matching lock, so create is race-free
        among aibuddy processes.
        """
        path = self.path(key)
        self._check_lock()
        if create and os.path.lexists(path):
            raise Conflict(f"{key} already exists")
        atomic_write(path, data)
        entry = _entry(key, os.stat(path))
        self._sweep(path.parent)
        return entry

    def _sweep(self, folder: Path) -> None:
        """Clean up after killed writes in a folder just written to, at most once a minute."""
        key, now = str(folder), time.monotonic()
        last = self._swept.get(key)
        if last is not None and now - last < STALE_TEMP_SECONDS:
            return
        self._swept[key] = now
        sweep_stale_temps(folder, self._temps_seen.pop(key, None))

    def append(self, key: str, data: bytes) -> None:
        """Add data at the end of key (a log), creating it; appends of aibuddy processes never
        interleave. Not atomic like write: a crash may leave a partial last line, which log
        readers skip."""
        path = self.path(key)
        self._check_lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        with self.lock("append-" + key.replace("/", "-")):
            fd = os.open(path, flags, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":  # a line left open by a hand edit
                    data = b"\n" + data
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)

    def delete(self, key: str) -> None:
        path = self.path(key)
        self._check_lock()
        try:
            os.unlink(path)
        except FileNotFoundError:
            raise NotFound(f"{key} not found") from None
        except IsADirectoryError:
            raise InvalidInput(f"{key} is a folder, not a file") from None

    @contextmanager
    def lock(self, name: str, timeout: float = 30.0) -> Iterator[None]:
        """An exclusive advisory lock in locks_dir, shared by every aibuddy process.

        When the lock file cannot be made (a read-only vault with no writable cache folder
        either, a full disk), the block runs without it, since reading needs no lock, and any
        write this store is asked for inside it fails with that error: nothing is ever written
        unlocked.
        """
        check_key(name)
        try:
            release = self._acquire(name, timeout)
        except OSError as error:
            refusal = error
        else:
            try:
                yield
            finally:
                release()
            return
        self._lock_refusals.append(refusal)
        try:
            yield
        finally:
            self._lock_refusals.pop()

    def _check_lock(self) -> None:
        """Refuse a write inside a lock block whose lock file could not be made."""
        if self._lock_refusals:
            refusal = self._lock_refusals[-1]
            raise OSError(refusal.errno, refusal.strerror, refusal.filename)

    def _acquire(self, name: str, timeout: float) -> Callable[[], None]:
        """Take the lock (waiting up to timeout, then "busy"); returns how to release it.

        The threads of this process queue for it in memory first, in turn, and the one at the
        front waits for other processes in a blocking flock (store/locks.py): nobody polls."""
        from .locks import process_lock

        self.locks_dir.mkdir(parents=True, exist_ok=True)
        lock_path = self.locks_dir / f"{name}.lock"
        busy = Busy(f"the vault is busy ({name} locked for {timeout:.0f}s); try again")
        deadline = time.monotonic() + timeout
        in_process = process_lock(os.path.abspath(lock_path))
        if not in_process.acquire(timeout):
            raise busy
        try:
            release_file = _lock_file(lock_path, deadline)
        except BaseException:
            in_process.release()
            raise
        if release_file is None:
            in_process.release()
            raise busy

        def release() -> None:
            try:
                release_file()
            finally:
                in_process.release()

        return release


def _lock_file(lock_path: Path, deadline: float) -> Callable[[], None] | None:
    """The file lock at lock_path, had by deadline (time.monotonic()): how to release it, or None."""
    try:
        import fcntl
    except ImportError:  # not POSIX: fall back to the portable library
        from filelock import FileLock, Timeout

        portable = FileLock(str(lock_path))
        try:
            portable.acquire(timeout=max(0.0, deadline - time.monotonic()))
        except Timeout:
            return None
        return portable.release
    from .locks import flock_until

    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        had = flock_until(fd, deadline)
    except BaseException:
        os.close(fd)
        raise
    if not had:
        os.close(fd)
        return None

    def release() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    return release


class StoreView:
    """Another store seen through a wrapper that passes every call on; subclasses change what
    writing means (refused, recorded first)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def scan(self, prefix: str, suffix: str | tuple[str, ...]) -> list[Entry]:
        return self._store.scan(prefix, suffix)

    def folders(self, prefix: str) -> list[str]:
        return self._store.folders(prefix)

    def read_many(self, keys: Iterable[str]) -> dict[str, tuple[bytes, Entry]]:
        return self._store.read_many(keys)

    def read(self, key: str) -> tuple[bytes, Entry]:
        return self._store.read(key)

    def stat(self, key: str) -> Entry:
        return self._store.stat(key)

    def exists(self, key: str) -> bool:
        return self._store.exists(key)

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        return self._store.write(key, data, create=create)

    def append(self, key: str, data: bytes) -> None:
        self._store.append(key, data)

    def move(self, key: str, new_key: str) -> None:
        self._store.move(key, new_key)

    def replace(self, key: str, new_key: str) -> None:
        self._store.replace(key, new_key)

    def delete(self, key: str) -> None:
        self._store.delete(key)

    def lock(self, name: str, timeout: float = 30.0) -> AbstractContextManager[None]:
        return self._store.lock(name, timeout)

    def changes(self, prefix: str, since: Collection[str]) -> Changes:
        return self._store.changes(prefix, since)


class ReadOnlyStore(StoreView):
    """A store through a handle that can only read: every write is refused (NotAllowed). The
    read-only model loops get this, so no tool, whatever a model calls, can change a file."""

    def _refuse(self, key: str) -> NoReturn:
        from ..errors import NotAllowed

        raise NotAllowed(f"read-only: {key} cannot be changed here")

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        self._refuse(key)

    def append(self, key: str, data: bytes) -> None:
        self._refuse(key)

    def move(self, key: str, new_key: str) -> None:
        self._refuse(key)

    def replace(self, key: str, new_key: str) -> None:
        self._refuse(key)

    def delete(self, key: str) -> None:
        self._refuse(key)

    def lock(self, name: str, timeout: float = 30.0) -> AbstractContextManager[None]:
        self._refuse(f"lock {name}")
