"""The narrow store the services write through, and its filesystem implementation.

Keys are relative POSIX paths inside the vault ("memory/demo/x.md"). The filesystem store
refuses keys that could leave the vault (absolute, "..", symlinks on the way) and writes
atomically (temp file in the same folder, fsync, rename), so a reader never sees half a file.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from stat import S_ISLNK, S_ISREG
from typing import NamedTuple, Protocol

from .errors import Conflict, InvalidInput, NotFound

TEMP_PREFIX = ".aibuddy-tmp-"


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
    """What the services need from storage; a database or object store would implement this."""

    def scan(self, prefix: str, suffix: str | tuple[str, ...]) -> list[Entry]: ...

    def folders(self, prefix: str) -> list[str]: ...

    def read(self, key: str) -> tuple[bytes, Entry]: ...

    def move(self, key: str, new_key: str) -> None: ...

    def replace(self, key: str, new_key: str) -> None: ...

    def stat(self, key: str) -> Entry: ...

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry: ...

    def delete(self, key: str) -> None: ...

    def append(self, key: str, data: bytes) -> None: ...

    def exists(self, key: str) -> bool: ...

    def lock(self, name: str, timeout: float = 30.0) -> AbstractContextManager[None]: ...


def check_key(key: str) -> str:
    """Refuse keys that are not plain relative paths inside the vault."""
    if not key or "\\" in key or "\x00" in key or key.startswith("/"):
        raise InvalidInput(f"invalid path {key!r}")
    parts = key.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidInput(f"invalid path {key!r}")
    return key


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


def atomic_write(path: Path, data: bytes) -> None:
    """Replace path with data so that readers see the old or the new file, never a mix.

    Temp file in the same folder, fsync, then rename; the file keeps its permissions.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    fd, temp = _create_temp(path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


class FileStore:
    """Store over a folder on disk."""

    def __init__(self, root: Path, locks_dir: Path) -> None:
        self.root = root.resolve()
        self.locks_dir = locks_dir

    def path(self, key: str) -> Path:
        """The on-disk path of key, refusing any symlink between the vault root and the file."""
        check_key(key)
        probe = self.root
        for part in key.split("/"):
            probe = probe / part
            if probe.is_symlink():
                raise InvalidInput(f"refusing {key}: {probe.relative_to(self.root)} is a symlink")
        return probe

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
        try:
            iterator = os.scandir(folder)
        except FileNotFoundError:
            return entries
        with iterator:
            for item in iterator:
                name = item.name
                if name[0] == "." or not name.endswith(suffix):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed since the folder was listed
                    continue
                if S_ISREG(st.st_mode) or S_ISLNK(st.st_mode):
                    append(Entry(base + name, st.st_mtime_ns, st.st_ctime_ns, st.st_size))
        return entries

    def folders(self, prefix: str) -> list[str]:
        """Names of the sub-folders directly in prefix (hidden ones and symlinks skipped)."""
        try:
            with os.scandir(self.path(prefix)) as iterator:
                return sorted(
                    item.name
                    for item in iterator
                    if item.name[0] != "." and item.is_dir(follow_symlinks=False)
                )
        except FileNotFoundError:
            return []

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
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(source, target)
        except FileNotFoundError:
            raise NotFound(f"{key} not found") from None

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
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
            return data, _entry(key, os.fstat(handle.fileno()))

    def exists(self, key: str) -> bool:
        return os.path.lexists(self.path(key))

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        """Write atomically; with create=True refuse to replace an existing file.

        Callers that check-then-create hold the matching lock, so create is race-free
        among aibuddy processes.
        """
        path = self.path(key)
        if create and os.path.lexists(path):
            raise Conflict(f"{key} already exists")
        atomic_write(path, data)
        return _entry(key, os.stat(path))

    def append(self, key: str, data: bytes) -> None:
        """Add data at the end of key (a log), creating it; appends of aibuddy processes never
        interleave. Not atomic like write: a crash may leave a partial last line, which log
        readers skip."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        with self.lock("append-" + key.replace("/", "-")):
            fd = os.open(path, flags, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)

    def delete(self, key: str) -> None:
        try:
            os.unlink(self.path(key))
        except FileNotFoundError:
            raise NotFound(f"{key} not found") from None
        except IsADirectoryError:
            raise InvalidInput(f"{key} is a folder, not a file") from None

    @contextmanager
    def lock(self, name: str, timeout: float = 30.0) -> Iterator[None]:
        """An exclusive advisory lock under .aibuddy/locks, shared by every aibuddy process."""
        check_key(name)
        self.locks_dir.mkdir(parents=True, exist_ok=True)
        lock_path = self.locks_dir / f"{name}.lock"
        try:
            import fcntl
        except ImportError:  # not POSIX: fall back to the portable library
            from filelock import FileLock, Timeout

            try:
                with FileLock(str(lock_path), timeout=timeout):
                    yield
            except Timeout:
                raise Conflict(f"the vault is busy ({name} locked for {timeout:.0f}s)") from None
            return
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Conflict(f"the vault is busy ({name} locked for {timeout:.0f}s)") from None
                    time.sleep(0.005)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
