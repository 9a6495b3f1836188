"""What changed in a vault's folders since a long-lived process last looked (inotify, on Linux).

A one-shot command learns what changed in a folder by scanning it: one stat per file, which at
10,000 memory records is most of what a warm server's recall costs. A long-lived process (the MCP
server) keeps one inotify instance instead and watches each folder it is asked about. The kernel
queues an event during every write, rename and delete, and the queue is drained when the question
is asked (never by a background thread), so every change completed before the question is in the
answer: there is no window in which a finished write, by any process or a person's editor, goes
unnoticed.

An answer (`Changes`) is a cursor to pass next time and the names of the files changed since the
cursor passed this time. A cursor reads `<source>.<position>`: whoever keeps cursors (a derived
index) keeps one per source and passes them all; each watch takes its own. Names are None,
"unknown: scan", when the folder was not watched before (first look, a folder deleted and made
again), the kernel's queue overflowed, the cursor is another watch's or too old, or inotify
cannot watch it (not Linux, no such folder, out of watches).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any, NamedTuple, Protocol

# A folder's log of changed names is cut after this many events: cursors older than the cut get
# "unknown" and scan once.
MAX_LOG = 50_000


class Changes(NamedTuple):
    cursor: str | None  # to pass next time; None: this store cannot tell, so every look scans
    names: frozenset[str] | None  # file names changed in the folder since the cursor given; None: scan


UNKNOWN = Changes(None, None)


class Watch(Protocol):
    """What a store asks: a FolderWatch in a long-lived process, or a one-shot command's
    store.watch_client.RemoteWatch, which asks the vault's watch process."""

    def changes(self, folder: Path, since: Collection[str]) -> Changes: ...

    def scanned(self, folder: Path, count: int) -> None:
        """A walk of folder (after an "unknown") listed count files."""


def cursor_source(cursor: str) -> str:
    """Which watch (or other store) a cursor comes from."""
    return cursor.split(".", 1)[0]


def further_on(cursor: str, than: str) -> bool:
    """Whether cursor stands after than: one source, one epoch (a watch's `epoch.count`), a
    larger last number. Keeping than instead would only show changes again."""
    source, _, position = cursor.partition(".")
    other, _, before = than.partition(".")
    *epoch, count = position.split(".")
    *other_epoch, other_count = before.split(".")
    same = source == other and epoch == other_epoch
    return same and count.isdigit() and other_count.isdigit() and int(count) > int(other_count)


class _Log:
    """One watched folder: the names changed since the watch began (or since the log was cut)."""

    def __init__(self, descriptor: int, epoch: int) -> None:
        self.descriptor, self.epoch = descriptor, epoch
        self.names: list[str] = []


class FolderWatch:
    """One inotify instance for a process; folders are watched from the first question about them."""

    def __init__(self) -> None:
        self._nonce = os.urandom(6).hex()  # a cursor from another watch (or process) never matches
        self._guard = threading.Lock()
        self._logs: dict[str, _Log] = {}
        self._by_descriptor: dict[int, str] = {}
        self._epochs = 0
        self._inotify: Any = None
        self._flags: Any = None
        try:
            from inotify_simple import INotify, flags  # type: ignore[import-untyped]
        except (ImportError, OSError):  # not Linux: every question is answered "scan"
            return
        try:
            self._inotify, self._flags = INotify(nonblocking=True), flags
        except OSError:  # the user's inotify instances are used up
            return

    @property
    def active(self) -> bool:
        return self._inotify is not None

    def close(self) -> None:
        with self._guard:
            if self._inotify is not None:
                self._inotify.close()
                self._inotify = None
            self._logs.clear()
            self._by_descriptor.clear()

    def scanned(self, folder: Path, count: int) -> None:
        pass  # this process watches already

    def changes(self, folder: Path, since: Collection[str]) -> Changes:
        """The files changed directly in folder since this watch's cursor among `since` (see the
        module's docstring)."""
        with self._guard:
            if self._inotify is None:
                return UNKNOWN
            self._drain()
            path = str(folder)
            log = self._logs.get(path)
            if log is None:
                log = self._watch(path)
                if log is None:
                    return UNKNOWN
                return Changes(self._cursor(log), None)  # what happened before the watch is unknown
            own = next((cursor for cursor in since if cursor_source(cursor) == self._nonce), None)
            return Changes(self._cursor(log), self._since(log, own))

    def _cursor(self, log: _Log) -> str:
        return f"{self._nonce}.{log.epoch}.{len(log.names)}"

    def _since(self, log: _Log, cursor: str | None) -> frozenset[str] | None:
        _, epoch, position = (cursor or "..").split(".", 2)
        if epoch != str(log.epoch) or not position.isdigit():
            return None
        start = int(position)
        return frozenset(log.names[start:]) if start <= len(log.names) else None

    def _watch(self, path: str) -> _Log | None:
        flags = self._flags
        mask = (
            flags.MODIFY | flags.ATTRIB | flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO
        ) | (flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW)
        try:
            descriptor = self._inotify.add_watch(path, mask)
        except OSError:  # no such folder (yet), not a folder, or no watches left
            return None
        self._epochs += 1
        log = _Log(descriptor, self._epochs)
        self._logs[path] = log
        self._by_descriptor[descriptor] = path
        return log

    def _forget(self, path: str) -> None:
        log = self._logs.pop(path, None)
        if log is not None:
            self._by_descriptor.pop(log.descriptor, None)

    def _drain(self) -> None:
        flags = self._flags
        gone = flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF
        for event in self._inotify.read(timeout=0):
            if event.mask & flags.Q_OVERFLOW:  # events were lost: every folder is unknown again
                for watched in list(self._logs):
                    self._drop_watch(watched)
                continue
            path = self._by_descriptor.get(event.wd)
            if path is None:
                continue
            if event.mask & gone:  # the folder itself went: watch the new one from the next look
                self._drop_watch(path)
                continue
            if not event.name or event.name.startswith(".") or event.mask & flags.ISDIR:
                continue  # the folder's own attributes, hidden and temporary files, sub-folders: never listed
            log = self._logs[path]
            log.names.append(event.name)
            if len(log.names) > MAX_LOG:
                self._epochs += 1
                log.epoch, log.names = self._epochs, []

    def _drop_watch(self, path: str) -> None:
        log = self._logs.get(path)
        if log is None:
            return
        self._forget(path)
        try:
            self._inotify.rm_watch(log.descriptor)
        except OSError:  # already removed by the kernel (the folder went)
            pass
