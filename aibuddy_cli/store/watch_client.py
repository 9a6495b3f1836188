"""The command's half of the watch process (store/watchd.py): asking it what changed in a folder, and
starting one when a folder is big enough for it to pay.

A one-shot command's store gets a `RemoteWatch` (Session does it): a FolderWatch look-alike whose
every question goes to the vault's watch process over its socket. Whatever goes wrong (no process,
a stale socket, a slow or foreign answer, a cursor of a process that has since died) is "unknown",
and the command walks the folder as it would without one: a watch process only ever saves time.

When a walk lists at least MIN_FILES files and no watch process answers, one is started in the
background (never waited for; never a prompt). Its first look at a folder is "unknown" too (what
happened before it watched is not known), so the command after it starts walks once more and then
keeps its cursor; from then on a command reads only what changed.

`[indexes] watch` in aibuddy.toml, or `AIBUDDY_WATCH`, says when: "auto" (the default: folders of
MIN_FILES files or more), "on" (any folder) or "off" (no watch process is started or asked).
The socket is in aibuddy's private socket folder (unix_peer.private_folder), named from the vault's
path, and both ends check the other's uid.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..settings import Settings
from .folder_watch import UNKNOWN, Changes

MIN_FILES = 2000  # the walk of 2,000 files costs about what starting a watch process costs
ANSWER_TIMEOUT = 2.0
PEER = "the watch process"  # as its failures name it


def socket_name(root: Path) -> str:
    """The socket's name, from the vault's path. Two vaults whose names meet share one watch
    process, which answers about each folder apart: no harm (zlib's sums: hashlib would cost each
    command 3 ms of import)."""
    import zlib

    data = os.fsencode(str(root))
    return f"watch-{zlib.crc32(data):08x}{zlib.adler32(data):08x}.sock"


def socket_path(environ: Mapping[str, str], root: Path) -> Path:
    """The vault's watch socket (PeerUnavailable when the private folder cannot be used)."""
    from ..unix_peer import private_folder

    return private_folder(environ) / socket_name(root)


def surely_absent(environ: Mapping[str, str], root: Path) -> bool:
    """Whether no watch process can be listening, seen without importing the socket machinery
    (10 ms of a command's start): the runtime folder is known and holds no such socket."""
    from ..xdg import base_dir

    runtime = base_dir(environ, "XDG_RUNTIME_DIR")
    return runtime is not None and not os.path.exists(runtime / "aibuddy" / socket_name(root))


class RemoteWatch:
    """A FolderWatch that asks the vault's watch process (see the module's docstring)."""

    def __init__(self, root: Path, settings: Settings, min_files: int = MIN_FILES) -> None:
        self.root, self.environ, self.min_files = root, settings.environ, min_files
        self.idle = settings.watch_idle
        self._absent = False  # no process answered in this command: do not ask again

    def changes(self, folder: Path, since: Collection[str]) -> Changes:
        if self._absent or surely_absent(self.environ, self.root):
            self._absent = True
            return UNKNOWN
        from ..unix_peer import NoPeer, PeerTimedOut, PeerUnavailable, send

        try:
            path = socket_path(self.environ, self.root)
            asked = {"op": "changes", "folder": str(folder), "since": list(since)}
            reply = send(path, asked, ANSWER_TIMEOUT, PEER)
        except (NoPeer, PeerTimedOut, PeerUnavailable):
            self._absent = True
            return UNKNOWN
        return _changes(reply)

    def scanned(self, folder: Path, count: int) -> None:
        """A walk of folder listed count files: start a watch process if none answered and it pays."""
        if self._absent and count >= self.min_files:
            self._absent = False  # started once per command
            start(self.environ, self.root, self.idle)


def _changes(reply: dict[str, Any]) -> Changes:
    """The answer as Changes, or UNKNOWN when it is not one."""
    cursor, names = reply.get("cursor"), reply.get("names")
    if not reply.get("ok") or not isinstance(cursor, str):
        return UNKNOWN
    if names is None:
        return Changes(cursor, None)
    if not isinstance(names, list) or not all(isinstance(name, str) and "/" not in name for name in names):
        return UNKNOWN
    return Changes(cursor, frozenset(names))


def start(environ: Mapping[str, str], root: Path, idle: str | None = None) -> None:
    """Start the vault's watch process in the background, unless one is starting or serving. The
    starter takes its lock and hands it down (as worker_client.start does for a model worker).
    idle: the seconds it stays up without a question (AIBUDDY_WATCH_IDLE; None: its default)."""
    from ..unix_peer import PeerUnavailable, open_lock, spawn_holding

    try:
        path = socket_path(environ, root)
        fd = open_lock(path)
    except (OSError, PeerUnavailable):
        return
    argv = [sys.executable, "-m", "aibuddy_cli.store.watchd", str(path), "--lock-fd", str(fd)]
    if idle:
        argv += ["--idle", idle]
    spawn_holding(fd, argv, environ, cwd="/")


class WatchStatus(NamedTuple):
    running: bool
    socket: str
    pid: int | None
    folders: int | None
    questions: int | None

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def status(environ: Mapping[str, str], root: Path) -> WatchStatus:
    from ..unix_peer import PeerTimedOut, PeerUnavailable, send

    path = socket_path(environ, root)  # PeerUnavailable: the folder is not private
    try:
        reply = send(path, {"op": "status"}, ANSWER_TIMEOUT, PEER)
    except (PeerUnavailable, PeerTimedOut):
        return WatchStatus(False, str(path), None, None, None)
    return WatchStatus(True, str(path), reply.get("pid"), reply.get("folders"), reply.get("questions"))


def stop(environ: Mapping[str, str], root: Path) -> WatchStatus:
    """Ask the vault's watch process to exit, and wait (a bounded moment) for its socket to go."""
    import time

    from ..unix_peer import PeerTimedOut, PeerUnavailable, send

    path = socket_path(environ, root)
    try:
        send(path, {"op": "stop"}, ANSWER_TIMEOUT, PEER)
    except (PeerUnavailable, PeerTimedOut):
        pass
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and path.exists():
        time.sleep(0.02)
    return status(environ, root)
