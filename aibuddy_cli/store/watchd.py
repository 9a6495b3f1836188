"""The watch process: one small long-lived process per user and vault that keeps a FolderWatch
(inotify) over the vault's folders and tells a one-shot command what changed in a folder since
the cursor the command's index kept, so the command reads only those files instead of one stat
per file of the folder (0.5 s at 100,000 records). It is to aibuddy what git's fsmonitor daemon is
to git; watch_client.py is the half a command uses, and says when one is started.

Exactness is FolderWatch's: the kernel queues an event during every write, and the queue is
drained when the question is asked, so a change completed before the question is in the answer.
A cursor from another watch process (one that died or was restarted) never matches: its answer is
"unknown", and the command walks the folder as it would without a watch process.

It answers only its own user (SO_PEERCRED, on a 0600 socket in a 0700 folder), only about a real
folder of that user (no symlink), only with names of files directly in that folder, and watches
at most MAX_FOLDERS folders. It holds the lock beside its socket for its whole life and exits
after IDLE_SECONDS without a question (or `AIBUDDY_WATCH_IDLE`). It imports little (os, socket,
json, inotify) to stay small: a few MB resident.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import sys
import time
from pathlib import Path
from typing import Any

from ..unix_peer import bind_private, peer_uid
from .folder_watch import FolderWatch

IDLE_SECONDS = 1800.0  # half an hour without a question
MAX_FOLDERS = 64
MAX_REQUEST = 1 << 20  # bytes: the cursors an index keeps are a few hundred


def serve(path: Path, lock_fd: int | None, idle: float) -> None:
    """Answer questions on the socket at path until idle for `idle` seconds or asked to stop."""
    fd = lock_fd if lock_fd is not None and _is_lock_of(lock_fd, path) else _open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held already on a handed-down descriptor
        except BlockingIOError:
            return  # another watch process serves this vault
        watch = FolderWatch()
        if not watch.active:
            return  # no inotify here: nothing to offer
        _serve_on(path, watch, idle)
    finally:
        os.close(fd)


def _open_lock(path: Path) -> int:
    return os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _is_lock_of(fd: int, path: Path) -> bool:
    try:
        held, named = os.fstat(fd), os.lstat(path.with_suffix(".lock"))
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def _serve_on(path: Path, watch: FolderWatch, idle: float) -> None:
    server = bind_private(path)  # (we hold the lock: a socket there is a dead one's)
    if server is None:
        return
    server.listen(64)
    server.settimeout(min(idle, 60.0) or 0.01)
    state: dict[str, Any] = {"last": time.monotonic(), "questions": 0, "stop": False, "folders": set()}
    try:
        while not state["stop"] and time.monotonic() - state["last"] < idle:
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                _handle(connection, watch, state)
            state["last"] = time.monotonic()
    finally:
        server.close()
        watch.close()
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _handle(connection: socket.socket, watch: FolderWatch, state: dict[str, Any]) -> None:
    """One question and its answer; the questions are answered one at a time (each takes
    microseconds), and a client that says nothing is dropped after a second."""
    uid = peer_uid(connection)
    if uid is not None and uid != os.getuid():
        return
    try:
        connection.settimeout(1.0)
        data = b""
        while not data.endswith(b"\n") and len(data) < MAX_REQUEST:
            chunk = connection.recv(65536)
            if not chunk:
                return
            data += chunk
        reply = _answer(json.loads(data), watch, state)
        connection.sendall(json.dumps(reply).encode() + b"\n")
    except (OSError, ValueError):
        pass


def _answer(request: Any, watch: FolderWatch, state: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op") if isinstance(request, dict) else None
    if op == "status":
        folders = len(state["folders"])
        return {"ok": True, "pid": os.getpid(), "questions": state["questions"], "folders": folders}
    if op == "stop":
        state["stop"] = True
        return {"ok": True}
    if op != "changes":
        return {"ok": False, "error": f"unknown request {op!r}"}
    folder, since = request.get("folder"), request.get("since")
    if not isinstance(since, list) or not all(isinstance(cursor, str) for cursor in since):
        return {"ok": False, "error": "since must be a list of cursors"}
    if not _own_folder(folder) or (folder not in state["folders"] and len(state["folders"]) >= MAX_FOLDERS):
        return {"ok": True, "cursor": None, "names": None}  # not ours to watch: the command walks
    state["folders"].add(folder)
    state["questions"] += 1
    changes = watch.changes(Path(folder), since)
    names = None if changes.names is None else sorted(changes.names)
    return {"ok": True, "cursor": changes.cursor, "names": names}


def _own_folder(folder: Any) -> bool:
    """Whether folder is an absolute path, normalised, of a real folder (not a symlink) of this user."""
    if not isinstance(folder, str) or not os.path.isabs(folder) or os.path.normpath(folder) != folder:
        return False
    try:
        found = os.lstat(folder)
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid()


def main(argv: list[str]) -> None:
    """`python -m aibuddy_cli.store.watchd SOCKET [--lock-fd N] [--idle SECONDS]` (watch_client starts it)."""
    path, lock_fd, idle = Path(argv[0]), None, IDLE_SECONDS
    rest = argv[1:]
    while len(rest) >= 2:
        option, value, rest = rest[0], rest[1], rest[2:]
        if option == "--lock-fd":
            lock_fd = int(value)
        elif option == "--idle":
            idle = max(float(value), 0.0)
    serve(path, lock_fd, idle)


if __name__ == "__main__":
    main(sys.argv[1:])
