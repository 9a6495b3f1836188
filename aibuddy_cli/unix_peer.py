"""A private Unix socket and who is at its other end: the model worker and the watch process answer only
their own user. Kept apart (standard library only) so the watch process stays small."""

from __future__ import annotations

import os
import socket
import struct
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
