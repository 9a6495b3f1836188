"""A second implementation of the Store protocol, in memory, for the tests.

If the services work against this and against the filesystem store alike, the protocol in
aibuddy_cli/store/files.py really is the whole of what they need from storage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager

from aibuddy_cli.errors import Busy, Conflict, InvalidInput, NotFound
from aibuddy_cli.store.files import Entry, check_key, read_each
from aibuddy_cli.store.folder_watch import UNKNOWN, Changes


class MemoryStore:
    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, int]] = {}  # key -> (data, version stamp in ns)
        self._clock = time.time_ns()
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def _stamp(self) -> int:
        self._clock = max(self._clock + 1, time.time_ns())
        return self._clock

    def _entry(self, key: str) -> Entry:
        data, stamp = self.files[key]
        return Entry(key, stamp, stamp, len(data))

    def _is_folder(self, key: str) -> bool:
        return any(other.startswith(key + "/") for other in self.files)

    def scan(self, prefix: str, suffix: str | tuple[str, ...]) -> list[Entry]:
        check_key(prefix)
        base = prefix + "/"
        return [
            self._entry(key)
            for key in sorted(self.files)
            if key.startswith(base)
            and "/" not in key[len(base) :]
            and not key[len(base) :].startswith(".")
            and key.endswith(suffix)
        ]

    def changes(self, prefix: str, since: Collection[str]) -> Changes:
        return UNKNOWN  # like a FileStore without a watch: every look scans

    def folders(self, prefix: str) -> list[str]:
        check_key(prefix)
        base = prefix + "/"
        names = {key[len(base) :].split("/", 1)[0] for key in self.files if key.startswith(base)}
        return sorted(
            name for name in names if not name.startswith(".") and self._is_folder(base + name)
        )

    def walk(self, prefix: str) -> list[str]:
        check_key(prefix)
        return sorted(key for key in self.files if key.startswith(prefix + "/"))

    def read(self, key: str) -> tuple[bytes, Entry]:
        check_key(key)
        if key not in self.files:
            if self._is_folder(key):
                raise InvalidInput(f"{key} is a folder, not a file")
            raise NotFound(f"{key} not found")
        return self.files[key][0], self._entry(key)

    def read_many(self, keys: Iterable[str]) -> dict[str, tuple[bytes, Entry]]:
        return read_each(self, keys)

    def stat(self, key: str) -> Entry:
        check_key(key)
        if key not in self.files:
            raise NotFound(f"{key} not found")
        return self._entry(key)

    def _check_place(self, key: str) -> None:
        """No file where a folder is, nor under a file (as on a file system)."""
        parents = [key[:at] for at, char in enumerate(key) if char == "/"]
        if self._is_folder(key) or any(parent in self.files for parent in parents):
            raise InvalidInput(f"{key} cannot be a file here")

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        check_key(key)
        with self._guard:
            if create and key in self.files:
                raise Conflict(f"{key} already exists")
            if key not in self.files:
                self._check_place(key)
            self.files[key] = (bytes(data), self._stamp())
        return self._entry(key)

    def append(self, key: str, data: bytes) -> None:
        check_key(key)
        with self._guard:
            if key not in self.files:
                self._check_place(key)
            old = self.files.get(key, (b"", 0))[0]
            separator = b"\n" if old and not old.endswith(b"\n") else b""
            self.files[key] = (old + separator + data, self._stamp())

    def move(self, key: str, new_key: str) -> None:
        if self.exists(new_key):
            raise Conflict(f"{new_key} already exists")
        self.replace(key, new_key)

    def replace(self, key: str, new_key: str) -> None:
        check_key(key), check_key(new_key)
        with self._guard:
            if key not in self.files:
                raise NotFound(f"{key} not found")
            if new_key not in self.files:
                self._check_place(new_key)
            self.files[new_key] = (self.files.pop(key)[0], self._stamp())

    def delete(self, key: str) -> None:
        check_key(key)
        with self._guard:
            if key not in self.files:
                raise NotFound(f"{key} not found")
            del self.files[key]

    def exists(self, key: str) -> bool:
        check_key(key)
        return key in self.files or self._is_folder(key)

    @contextmanager
    def lock(self, name: str, timeout: float = 30.0) -> Iterator[None]:
        check_key(name)
        with self._guard:
            lock = self._locks.setdefault(name, threading.Lock())
        if not lock.acquire(timeout=timeout):
            raise Busy(f"the vault is busy ({name} locked for {timeout:.0f}s); try again")
        try:
            yield
        finally:
            lock.release()
