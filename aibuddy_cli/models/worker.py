"""The model worker: one long-lived process that keeps litellm imported, so a shell loop of model
commands (`memory recall`, `kb ask`, `memory extract` with a model) pays litellm's multi-second
import once, not per call (the pattern of mypy's dmypy). This is its serving half and its
commands (`aibuddy worker serve|status|stop`); worker_client.py is the half calls.py calls, and
says how a worker is found, keyed to one environment and kept to one user.

It only makes model calls: it reads no vault file and knows no user. A worker binds its socket
only once litellm is imported, so every call it takes pays only the model's latency; it holds the
lock beside the socket for its whole life (taken by the caller that started it and handed down).
It exits once unused for as long as its own start took (spawn to ready, measured here; a machine
that used several provider environments keeps no idle process per environment), or for
`AIBUDDY_WORKER_IDLE` seconds, or `[models] keep_worker`, when the user asks; `AIBUDDY_WORKER=0`
turns it off.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from ..unix_peer import PeerTimedOut, PeerUnavailable, bind_private, lock_path, open_lock, peer_uid, send
from .worker_client import asked_idle, derived_idle, fingerprint, socket_path

DRAIN_SECONDS = 600.0  # the longest a model timeout may be: calls in flight when the worker stops


def _ours(connection: socket.socket) -> bool:
    uid = peer_uid(connection)
    return uid is None or uid == os.getuid()


def _is_lock_of(fd: int, path: Path) -> bool:
    """Whether fd is open on path's lock file (the descriptor a starter handed down)."""
    try:
        held, named = os.fstat(fd), os.lstat(lock_path(path))
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


@contextmanager
def _worker_lock(path: Path, wait: float = 0.0, inherited: int | None = None) -> Iterator[bool]:
    """The lock a worker holds for its whole life (True if this process got it within wait
    seconds), on the descriptor its starter handed down when it is that lock's; released on exit."""
    from ..store.locks import flock_until

    fd = inherited if inherited is not None and _is_lock_of(inherited, path) else open_lock(path)
    try:
        yield flock_until(fd, time.monotonic() + wait)  # on a handed-down descriptor: held already
    finally:
        os.close(fd)


class WorkerStatus(NamedTuple):
    running: bool
    socket: str
    pid: int | None
    calls: int | None
    idle_seconds: float | None  # how long it stays up unused (None: not running, nothing asked)
    start_seconds: float | None  # what its start took (spawn to ready)

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def _command_path(environ: Mapping[str, str]) -> Path:
    """The socket for `aibuddy worker status|stop`: NotAllowed (exit 5) when its folder is not
    private (a symlink, another owner, open to others)."""
    from ..errors import NotAllowed

    try:
        return socket_path(environ)
    except PeerUnavailable as exc:
        raise NotAllowed(f"the model worker's folder is not used: {exc}") from None


def status(environ: Mapping[str, str]) -> WorkerStatus:
    path = _command_path(environ)
    try:
        reply = send(path, {"op": "status"}, 2.0)
    except (PeerUnavailable, PeerTimedOut):
        return WorkerStatus(False, str(path), None, None, asked_idle(environ), None)
    pid, calls, idle, start = (reply.get(key) for key in ("pid", "calls", "idle_limit", "start_seconds"))
    return WorkerStatus(True, str(path), pid, calls, idle, start)


def stop(environ: Mapping[str, str]) -> WorkerStatus:
    path = _command_path(environ)
    try:
        send(path, {"op": "stop"}, 2.0)
    except (PeerUnavailable, PeerTimedOut):
        pass
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and path.exists():
        time.sleep(0.02)
    return status(environ)


def serve(environ: Mapping[str, str], lock_fd: int | None = None, spawned_at: float | None = None) -> None:
    """Answer model calls on the socket until unused for its idle limit, or asked to stop. The
    socket is bound only once litellm is imported (within the import bound), so a worker that
    answers is a warm one. lock_fd: the worker's lock, taken by the process that started this
    one; spawned_at: when it spawned this one (time.time()), else now: the start of its start cost."""
    begun = spawned_at if spawned_at is not None and spawned_at <= time.time() else time.time()
    from ..errors import ModelError
    from ..settings import Settings
    from . import calls as models

    digest = fingerprint(environ)  # before litellm's import can change the environment
    try:
        path = socket_path(environ, digest)
        # A moment's wait: a client that found no worker checks the lock as this one starts.
        with _worker_lock(path, wait=0.5, inherited=lock_fd) as free:
            if not free:
                return  # another worker serves this environment, or is starting
            try:
                bound = models.import_timeout(Settings.read(environ))
            except ValueError:
                bound = models.DEFAULT_IMPORT_TIMEOUT
            try:
                models.import_litellm(bound)
            except ModelError:
                return  # litellm did not import (in time): calls stay in-process
            _serve_on(path, digest, time.time() - begun, asked_idle(environ))
    except (OSError, PeerUnavailable):
        return


def _serve_on(path: Path, digest: str, start_seconds: float, asked: float | None = None) -> None:
    """Serve on path until unused for `asked` seconds (AIBUDDY_WORKER_IDLE) or, when the user
    asked nothing, for derived_idle(start_seconds) or the longest `keep_worker` a call asked."""
    server = bind_private(path)  # (we hold the lock: a socket there is a dead one's)
    if server is None:
        return
    server.listen(16)
    server.settimeout(1.0)
    state: dict[str, Any] = {
        "last": time.monotonic(), "calls": 0, "stop": False, "env": digest, "busy": 0,
        "start_seconds": start_seconds, "asked": asked is not None,
        "idle": asked if asked is not None else derived_idle(start_seconds),
    }  # fmt: skip
    busy = threading.Lock()

    def handle(connection: socket.socket) -> None:
        with busy:
            state["busy"] += 1
        try:
            if not _ours(connection):
                return
            connection.settimeout(30.0)  # a client that connects and says nothing never pins a thread
            data = b""
            while not data.endswith(b"\n"):
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            request = json.loads(data)
            reply = _answer(request, state)
            connection.sendall(json.dumps(reply).encode() + b"\n")
        except (OSError, ValueError):
            pass
        finally:
            connection.close()
            state["last"] = time.monotonic()
            with busy:
                state["busy"] -= 1

    handlers: list[threading.Thread] = []
    try:
        # Idle means no call for `idle` seconds and none in flight: a long call is never cut off.
        while not state["stop"] and (state["busy"] or time.monotonic() - state["last"] < state["idle"]):
            server.settimeout(min(1.0, max(state["idle"] / 4, 0.05)))  # an exit close to the limit
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            state["last"] = time.monotonic()
            handlers = [thread for thread in handlers if thread.is_alive()]
            thread = threading.Thread(target=handle, args=(connection,), daemon=True)
            handlers.append(thread)
            thread.start()
    finally:
        server.close()
        for thread in handlers:  # a stop lets the calls in flight finish (each within its timeout)
            thread.join(timeout=DRAIN_SECONDS)
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _answer(request: Any, state: dict[str, Any]) -> dict[str, Any]:
    from ..errors import ModelError
    from .calls import ModelSettings, call_in_process

    op = request.get("op") if isinstance(request, dict) else None
    if op == "status":
        return {
            "ok": True, "pid": os.getpid(), "calls": state["calls"],
            "idle_limit": state["idle"], "start_seconds": state["start_seconds"],
        }  # fmt: skip
    if op == "stop":
        state["stop"] = True
        return {"ok": True}
    if op != "complete":
        return {"ok": False, "error": f"unknown request {op!r}"}
    if request.get("env") != state["env"]:
        return {"ok": False, "refused": True, "error": "the caller's environment is not this worker's"}
    state["calls"] += 1
    try:
        settings = ModelSettings(**request["settings"])
        if settings.keep_worker is not None and not state["asked"]:  # the user asked to keep it
            state["idle"] = max(state["idle"], float(settings.keep_worker))
        message = call_in_process(settings, request["messages"], **request.get("options", {}))
    except ModelError as exc:
        return {"ok": False, "error": str(exc)}
    except (KeyError, TypeError) as exc:
        return {"ok": False, "error": f"bad request ({exc})"}
    return {"ok": True, "message": _message_json(message)}


def _message_json(message: Any) -> dict[str, Any]:
    def field(value: Any, name: str) -> Any:
        return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)

    calls = []
    for call in field(message, "tool_calls") or []:
        function = field(call, "function")
        calls.append(
            {
                "id": field(call, "id"),
                "type": "function",
                "function": {"name": field(function, "name"), "arguments": field(function, "arguments")},
            }
        )
    return {"content": field(message, "content"), "tool_calls": calls}
