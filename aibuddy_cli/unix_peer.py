"""A private Unix socket and who is at its other end: the model worker and the watch process answer only
their own user; and how either is started, holding its lock. Kept apart (standard library only) so
the watch process stays small."""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Mapping
from pathlib import Path


def peer_uid(connection: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket; None where the system cannot
    tell (no SO_PEERCRED: not Linux)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        credentials = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    _, uid, _ = struct.unpack("3i", credentials)
    return int(uid)


def bind_private(path: Path) -> socket.socket | None:
    """A Unix socket bound at path, readable and writable by this user only (a stale socket left
    there by a process that died is removed first: the caller holds the lock that says none
    lives); None when it cannot be bound."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        server.bind(str(path))
    except OSError:
        server.close()
        return None
    finally:
        os.umask(old_mask)
    return server


def spawn_holding(fd: int, argv: list[str], environ: Mapping[str, str], cwd: str | None = None) -> None:
    """Start argv in the background, in a session of its own, handing it the lock on the open file
    fd (the same open file, so the same lock), unless the lock is taken: one serves, or is
    starting, so two starts at once start one. fd is closed here (the child's copy keeps the
    lock); a start that cannot be made is given up quietly (the caller goes on without it)."""
    import fcntl
    import subprocess

    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            pass_fds=(fd,),
            env=dict(environ),
            cwd=cwd,
        )
    except (OSError, ValueError):
        return
    finally:
        os.close(fd)
