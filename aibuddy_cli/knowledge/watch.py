"""`kb watch`: keep sidecars, review status and the search index current while files change.

The folders are watched as a long-lived server watches memory's (store/folder_watch.py: inotify,
drained when asked, no thread of its own), every folder under the knowledge roots, looked at five
times a second; off Linux, where inotify is not there, by comparing the files' sizes and times.
Editors save through temp files and renames and produce bursts, so a change only marks the vault
dirty and a refresh runs once things have been quiet for `debounce` seconds. The refresh itself
decides what changed, by content hash, so no event is trusted blindly.

In a team vault the user's personal documents are in their personal vault, not under the vault's
knowledge/ folder: the folders watched are the ones the store says hold the knowledge keys.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import AibuddyError
from ..store.composed import local_folders
from ..store.files import TEMP_PREFIX
from ..store.folder_watch import FolderWatch
from .service import KnowledgeService

POLL_SECONDS = 0.2  # how often the folders are looked at


def watch_vault(
    service: KnowledgeService,
    *,
    debounce: float = 0.5,
    report: Callable[[list[str]], None],
    stop: threading.Event | None = None,
) -> None:
    """Run until Ctrl-C, SIGTERM or `stop` is set."""
    stop = stop or threading.Event()
    roots = watched_folders(service)
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
    looks = _Looks(roots)

    def refresh() -> None:
        service.warnings.clear()
        try:
            service.refresh()
        except (AibuddyError, OSError, sqlite3.Error) as exc:  # keep watching; the next change retries
            service.warnings.append(f"error: {getattr(exc, 'message', None) or exc}")
        report(list(service.warnings))

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        looks.changed()  # where things stand before the first refresh
        refresh()
        while not stop.wait(POLL_SECONDS):
            if not looks.changed():
                continue
            while not stop.wait(debounce) and looks.changed():  # wait for a quiet moment
                pass
            refresh()
    except KeyboardInterrupt:
        pass
    finally:
        looks.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class _Looks:
    """Whether anything under the roots changed since the last look (the first look tells where
    things stand: False): a FolderWatch's answers for every folder under them, or, where it cannot
    watch one (not Linux, no inotify watches left), the files' sizes and modification times."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.watch = FolderWatch()
        self.stamping = not self.watch.active
        self.cursors: dict[str, str] = {}
        self.files: dict[str, tuple[int, int]] | None = None
        self.looked = False

    def changed(self) -> bool:
        first, self.looked = not self.looked, True
        seen = False if self.stamping else self._watched(first)
        if self.stamping:  # (from the start, or since a folder could not be watched)
            files = dict(_stamps(self.roots))
            seen = seen or (self.files is not None and files != self.files)
            self.files = files
        return seen and not first

    def _watched(self, first: bool) -> bool:
        seen = False
        folders = [str(folder) for folder in _folders(self.roots)]
        for folder in folders:
            cursor = self.cursors.get(folder)
            answer = self.watch.changes(Path(folder), [cursor] if cursor else [])
            if answer.cursor is None:  # this folder cannot be watched: compare the files instead
                self.stamping = True
                return True
            self.cursors[folder] = answer.cursor
            # A folder's first answer is "unknown" (a new folder: a change); a later one names the
            # files changed, or is "unknown" again when the watch lost track (a change too).
            seen = seen or (answer.names is None or bool(answer.names) if cursor else not first)
        for gone in set(self.cursors) - set(folders):
            del self.cursors[gone]
            seen = True
        return seen

    def close(self) -> None:
        self.watch.close()


def _folders(roots: list[Path]) -> Iterator[Path]:
    """Every folder under roots, themselves included (hidden ones left out)."""
    for root in roots:
        for folder, subfolders, _ in os.walk(root):
            subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
            yield Path(folder)


def _stamps(roots: list[Path]) -> Iterator[tuple[str, tuple[int, int]]]:
    for folder in _folders(roots):
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or TEMP_PREFIX in entry.name:
                continue
            try:
                found = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISDIR(found.st_mode):  # (a folder's own time changes with what is in it)
                yield entry.path, (found.st_size, found.st_mtime_ns)


def watched_folders(service: KnowledgeService) -> list[Path]:
    """The folders holding the knowledge documents the service reads: <vault>/knowledge, and in a
    team vault the user's personal documents' folder in their personal vault."""
    return local_folders(service.state.store, "knowledge")
