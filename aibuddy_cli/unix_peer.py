"""Who is at the other end of a Unix socket: the model worker and the watch process answer only
their own user. Kept apart (standard library only) so the watch process stays small."""

from __future__ import annotations

import socket
import struct


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
