"""A private Unix socket and who is at its other end: the model worker and the watch process answer
only their own user; how either is started, holding its lock; and how a command asks one (the
private folder of the sockets, one request and its reply). Kept apart (the standard library and
xdg.py only) so the watch process stays small."""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


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


# --- asking one: a private folder for the sockets, one request and its reply -------------------------

CONNECT_TIMEOUT = 0.2


class PeerUnavailable(Exception):
    """No process of ours to ask: the private folder cannot be used, the one answering is not
    ours, or the exchange broke."""


class NoPeer(PeerUnavailable):
    """Nothing listens on the socket (none started, or a stale socket)."""


class PeerTimedOut(Exception):
    """The request went out and no reply came in time."""


def private_folder(environ: Mapping[str, str]) -> Path:
    """The private socket folder, made if missing; PeerUnavailable unless it is a real folder
    (not a symlink) of this user that no one else may enter."""
    from .xdg import base_dir

    runtime = base_dir(environ, "XDG_RUNTIME_DIR")
    base = runtime / "aibuddy" if runtime else Path(tempfile.gettempdir()) / f"aibuddy-{os.getuid()}"
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise PeerUnavailable(f"{base} cannot be made ({exc.strerror or exc})") from None
    check_private(base)
    return base


def check_private(path: Path) -> None:
    """PeerUnavailable unless path, not followed if a link, is a folder of ours closed to others."""
    try:
        found = os.lstat(path)
    except OSError as exc:
        raise PeerUnavailable(f"{path} cannot be checked ({exc.strerror or exc})") from None
    if stat.S_ISLNK(found.st_mode):
        raise PeerUnavailable(f"{path} is a symbolic link, not a private folder")
    if not stat.S_ISDIR(found.st_mode):
        raise PeerUnavailable(f"{path} is not a folder")
    if found.st_uid != os.getuid():
        raise PeerUnavailable(f"{path} belongs to uid {found.st_uid}, not this user")
    if found.st_mode & 0o077:
        raise PeerUnavailable(f"{path} is open to other users (mode {found.st_mode & 0o777:o})")


def lock_path(path: Path) -> Path:
    return path.with_suffix(".lock")


def open_lock(path: Path) -> int:
    return os.open(lock_path(path), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def send(path: Path, request: dict[str, Any], timeout: float, peer: str = "the peer") -> dict[str, Any]:
    """One request and its reply, all within timeout seconds (connecting within CONNECT_TIMEOUT).
    NoPeer when nothing listens, PeerUnavailable when the peer is not ours or the exchange
    breaks, PeerTimedOut when the request went out and no reply came in time."""
    deadline = time.monotonic() + timeout
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(min(CONNECT_TIMEOUT, timeout))
        try:
            client.connect(str(path))
        except OSError as exc:  # none, stale, refused, too slow to accept: go on without it
            raise NoPeer(str(exc)) from None
        uid = peer_uid(client)
        if uid is not None and uid != os.getuid():
            raise PeerUnavailable(f"{path} is served by uid {uid}, not this user: not used")
        data = b""
        try:
            client.settimeout(max(deadline - time.monotonic(), 0.001))
            client.sendall(json.dumps(request).encode() + b"\n")
            while not data.endswith(b"\n"):
                client.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = client.recv(65536)
                if not chunk:
                    raise PeerUnavailable(f"{peer} closed the connection")
                data += chunk
        except TimeoutError:
            raise PeerTimedOut(f"no answer from {peer} within {timeout:g}s") from None
        reply = json.loads(data)
        if not isinstance(reply, dict):
            raise PeerUnavailable(f"the reply of {peer} is not an object")
        return reply
    except (OSError, ValueError) as exc:
        raise PeerUnavailable(str(exc)) from None
    finally:
        client.close()
