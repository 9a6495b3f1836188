"""The model worker: one long-lived process that keeps litellm imported, so a shell loop of model
commands (`memory recall`, `kb ask`, `memory extract` with a model) pays litellm's multi-second
import once, not per call (the pattern of mypy's dmypy).

It only makes model calls: it reads no vault file and knows no user. So it is keyed by the
environment that decides what a model call does (the provider variables litellm reads): one
worker per user account and environment, on a Unix socket in a 0700 folder of the user's own
(`$XDG_RUNTIME_DIR/aibuddy/`, else `/tmp/aibuddy-<uid>/`; a path under the vault could exceed
the 108 bytes a socket path may have), mode 0600, and it answers only its own uid.

`models.complete` asks it first when the command runs from the `aibuddy` entry point; when it
cannot be reached (none yet, a stale socket, a crash) the call runs in-process as before and a
worker is started for the next call; nothing fails or hangs because of it (connecting is bounded
by 0.2 s, the answer by the call's own timeout). It exits after `AIBUDDY_WORKER_IDLE` seconds
(default 600) without a call; `AIBUDDY_WORKER=0` turns it off. `aibuddy worker status|stop`.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .models import ModelSettings

CONNECT_TIMEOUT = 0.2
DEFAULT_IDLE = 600.0
# What litellm and the providers read from the environment: a worker serves one set of them.
_ENV_PREFIXES = ("OPENAI", "AZURE", "ANTHROPIC", "GEMINI", "GOOGLE", "VERTEX", "AWS", "MISTRAL", "COHERE",
                 "GROQ", "OLLAMA", "HF_", "HUGGINGFACE", "DEEPSEEK", "OPENROUTER", "TOGETHER", "XAI",
                 "LITELLM", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_", "REQUESTS_CA")  # fmt: skip

enabled = False  # set by the entry point; library callers and in-process tests call models directly


class WorkerUnavailable(Exception):
    """No worker answered: the caller calls the model in-process."""


def fingerprint(environ: Mapping[str, str]) -> str:
    relevant = sorted((k, v) for k, v in environ.items() if k.upper().startswith(_ENV_PREFIXES))
    return hashlib.sha256(json.dumps(relevant).encode()).hexdigest()[:16]


def folder(environ: Mapping[str, str]) -> Path:
    runtime = environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "aibuddy" if runtime else Path(tempfile.gettempdir()) / f"aibuddy-{os.getuid()}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    if base.stat().st_uid != os.getuid() or base.stat().st_mode & 0o077:
        raise WorkerUnavailable(f"{base} is not a private folder of this user")
    return base


def socket_path(environ: Mapping[str, str]) -> Path:
    return folder(environ) / f"worker-{fingerprint(environ)}.sock"


def idle_seconds(environ: Mapping[str, str]) -> float:
    try:
        return max(float(environ.get("AIBUDDY_WORKER_IDLE", DEFAULT_IDLE)), 0.0)
    except ValueError:
        return DEFAULT_IDLE


# --- the client side ---------------------------------------------------------------------------


def _request(path: Path, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(CONNECT_TIMEOUT)
        try:
            client.connect(str(path))
        except OSError as exc:  # none, stale, refused: the caller goes on without it
            raise WorkerUnavailable(str(exc)) from None
        client.settimeout(timeout)
        client.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = client.recv(65536)
            if not chunk:
                raise WorkerUnavailable("the worker closed the connection")
            data += chunk
        reply = json.loads(data)
        if not isinstance(reply, dict):
            raise WorkerUnavailable("the worker's reply is not an object")
        return reply
    except (OSError, ValueError) as exc:
        raise WorkerUnavailable(str(exc)) from None
    finally:
        client.close()


def complete(
    settings: ModelSettings, messages: Sequence[Mapping[str, Any]], options: Mapping[str, Any]
) -> Any:
    """The model's message through the worker (an object with content and tool_calls), or
    ModelError as in-process; WorkerUnavailable when there is no worker to ask (one is started)."""
    from .errors import ModelError

    environ = os.environ
    try:
        path = socket_path(environ)
    except (OSError, WorkerUnavailable) as exc:
        raise WorkerUnavailable(str(exc)) from None
    request = {
        "op": "complete",
        "settings": settings._asdict(),
        "messages": list(messages),
        "options": dict(options),
    }
    try:
        reply = _request(path, request, settings.timeout + 5)
    except WorkerUnavailable:
        start(environ)
        raise
    if not reply.get("ok"):
        raise ModelError(str(reply.get("error") or "the model call failed in the worker"))
    message = reply.get("message") or {}
    return SimpleNamespace(content=message.get("content"), tool_calls=message.get("tool_calls") or None)


def start(environ: Mapping[str, str]) -> None:
    """Start a worker for this environment in the background (it exits when idle)."""
    if idle_seconds(environ) <= 0:
        return
    import subprocess

    subprocess.Popen(
        [sys.executable, "-m", "aibuddy_cli", "worker", "serve"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=dict(environ),
    )


class WorkerStatus(NamedTuple):
    running: bool
    socket: str
    pid: int | None
    calls: int | None
    idle_seconds: float

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def status(environ: Mapping[str, str]) -> WorkerStatus:
    path = socket_path(environ)
    try:
        reply = _request(path, {"op": "status"}, 2.0)
    except WorkerUnavailable:
        return WorkerStatus(False, str(path), None, None, idle_seconds(environ))
    return WorkerStatus(True, str(path), reply.get("pid"), reply.get("calls"), idle_seconds(environ))


def stop(environ: Mapping[str, str]) -> WorkerStatus:
    path = socket_path(environ)
    try:
        _request(path, {"op": "stop"}, 2.0)
    except WorkerUnavailable:
        pass
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and path.exists():
        time.sleep(0.02)
    return status(environ)


# --- the server side ---------------------------------------------------------------------------


def serve(environ: Mapping[str, str]) -> None:
    """Answer model calls on the socket until idle for idle_seconds, or asked to stop."""
    from . import models

    path = socket_path(environ)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _request(path, {"op": "status"}, 1.0)
        return  # another worker serves this environment already
    except WorkerUnavailable:
        pass
    try:
        path.unlink()  # a stale socket of a worker that died
    except FileNotFoundError:
        pass
    old_mask = os.umask(0o177)
    try:
        server.bind(str(path))
    except OSError:
        return  # another worker won the race
    finally:
        os.umask(old_mask)
    server.listen(16)
    server.settimeout(1.0)
    idle = idle_seconds(environ)
    state = {"last": time.monotonic(), "calls": 0, "stop": False}
    threading.Thread(target=models._litellm, daemon=True).start()  # warm at once

    def handle(connection: socket.socket) -> None:
        try:
            if not _same_user(connection):
                return
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

    try:
        while not state["stop"] and time.monotonic() - state["last"] < idle:
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            state["last"] = time.monotonic()
            threading.Thread(target=handle, args=(connection,), daemon=True).start()
    finally:
        server.close()
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _same_user(connection: socket.socket) -> bool:
    """Only the worker's own user may ask it (the folder is private too)."""
    try:
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return True  # no SO_PEERCRED here: the 0700 folder and 0600 socket are the guard
    _, uid, _ = struct.unpack("3i", credentials)
    return uid == os.getuid()


def _answer(request: Any, state: dict[str, Any]) -> dict[str, Any]:
    from .errors import ModelError
    from .models import ModelSettings, call_in_process

    op = request.get("op") if isinstance(request, dict) else None
    if op == "status":
        return {"ok": True, "pid": os.getpid(), "calls": state["calls"]}
    if op == "stop":
        state["stop"] = True
        return {"ok": True}
    if op != "complete":
        return {"ok": False, "error": f"unknown request {op!r}"}
    state["calls"] += 1
    try:
        settings = ModelSettings(**request["settings"])
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
