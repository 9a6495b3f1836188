"""`kb watch`: keep sidecars, review status and the search index current while files change.

watchdog reports raw events; editors save through temp files and renames and produce bursts, so
events only mark the vault dirty and a refresh runs once things have been quiet for `debounce`
seconds. The refresh itself decides what changed, by content hash, so no event is trusted blindly.

In a team vault the user's personal documents are in their personal vault, not under the vault's
knowledge/ folder: the folders watched are the ones the store says hold the knowledge keys.
"""

from __future__ import annotations

import signal
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import AibuddyError
from ..store.composed import local_folders
from ..store.files import TEMP_PREFIX
from .service import KnowledgeService


def watch_vault(
    service: KnowledgeService,
    *,
    debounce: float = 0.5,
    report: Callable[[list[str]], None],
    stop: threading.Event | None = None,
) -> None:
    """Run until Ctrl-C, SIGTERM or `stop` is set."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    stop = stop or threading.Event()
    dirty = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            paths = [str(event.src_path), str(getattr(event, "dest_path", "") or "")]
            if all(not path or TEMP_PREFIX in path for path in paths):
                return  # our own atomic-write temp files
            dirty.set()

    def refresh() -> None:
        service.warnings.clear()
        try:
            service.refresh()
        except (AibuddyError, OSError, sqlite3.Error) as exc:  # keep watching; the next change retries
            service.warnings.append(f"error: {getattr(exc, 'message', None) or exc}")
        report(list(service.warnings))

    observer = Observer()
    for folder in watched_folders(service):
        folder.mkdir(parents=True, exist_ok=True)
        observer.schedule(Handler(), str(folder), recursive=True)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    observer.start()
    try:
        refresh()
        while not stop.is_set():
            if not dirty.wait(0.2):
                continue
            while True:  # wait for a quiet moment
                dirty.clear()
                if not dirty.wait(debounce) or stop.is_set():
                    break
            refresh()
    except KeyboardInterrupt:
        pass
    finally:
        observer.stop()
        observer.join()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def watched_folders(service: KnowledgeService) -> list[Path]:
    """The folders holding the knowledge documents the service reads: <vault>/knowledge, and in a
    team vault the user's personal documents' folder in their personal vault."""
    return local_folders(service.state.store, "knowledge")
