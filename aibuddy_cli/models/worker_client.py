"""The client half of the model worker (worker.py): finding the worker that serves this
environment, asking it for one completion, starting one when none listens. Imported by calls.py;
it never imports the serving half, nor models (the worker calls models, not the other way).

A worker serves exactly one environment, the one it was started with: what a call does beyond
its settings (model, api_base, timeout: sent with each request) comes from the environment, and
litellm reads almost any variable (`HOSTED_VLLM_API_BASE`, `DEEPINFRA_API_KEY`, `ALL_PROXY`, …).
Its key is a digest of the whole environment except the variables in IGNORED / IGNORED_PREFIXES,
which change per shell or terminal and no provider client reads (and aibuddy's own `AIBUDDY_*`,
whose model settings travel with each request). The working directory is part of the key when it
can matter (a relative path in a variable, litellm allowed to load a `.env`). The socket's name
comes from the digest, and every request carries the whole digest, which the worker checks: a
mismatch is refused and the call runs in-process. The environment is the one the caller passes
(`ModelSettings.worker`), never read here from the process.

The socket lives in a 0700 folder of the user's own (`$XDG_RUNTIME_DIR/aibuddy/`, else, or when
that is not an absolute path, `/tmp/aibuddy-<uid>/`; a path under the vault could exceed the 108
bytes a socket path may have), checked without following links (a symlink, another owner or a
mode open to others is refused); the socket is 0600. Both ends check the other's uid on every
connection (SO_PEERCRED, on Linux; elsewhere the private folder is the only guard): the client
never sends a request (the manifest of a recall) to, nor uses an answer from, a process of
another user.

When no worker can be reached (none yet, a stale socket, a crash) the call runs in-process and a
worker is started for the next call. Connecting is bounded by 0.2 s, and the whole wait for the
answer by the call's own timeout (a worker that stops answering, even a stopped one, is a model
timeout: the caller's fallback runs). A lock beside the socket keeps a second worker of the same
environment from starting: the caller that starts one takes it and hands it down to the worker,
so calls that find no worker at once start one between them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..unix_peer import NoPeer, PeerTimedOut, PeerUnavailable, open_lock, private_folder, send
from .roles import ModelSettings

ANSWER_GRACE = 1.0  # past the model's timeout, for the worker's own "timed out" reply to arrive
# A worker nobody asked to keep exits once unused for this many times what its own start took
# (spawn to ready, measured by the worker): an idle worker never costs more waiting than it saves.
IDLE_PER_START = 1.0
MIN_IDLE = 1.0  # seconds: a start measured shorter (a clock step) still gets this much

# Variables that change per shell, terminal or test and that no provider client reads: they do
# not make a different worker. Everything else in the environment does.
IGNORED = frozenset(
    {
        "_", "PWD", "OLDPWD", "SHLVL", "COLUMNS", "LINES", "LINENO", "PS1", "PS2", "PS3", "PS4",
        "PROMPT_COMMAND", "HISTFILE", "HISTSIZE", "HISTFILESIZE", "HISTCONTROL", "HISTIGNORE",
        "HISTTIMEFORMAT", "COLORTERM", "WINDOWID", "WINDOW", "STY", "TMUX", "TMUX_PANE", "SSH_TTY",
        "SSH_CLIENT", "SSH_CONNECTION", "SSH_AUTH_SOCK", "GPG_TTY", "LS_COLORS", "LSCOLORS",
        "XDG_SESSION_ID", "XDG_VTNR", "SECURITYSESSIONID", "INSIDE_EMACS", "STARSHIP_SESSION_KEY",
        "PYTEST_CURRENT_TEST", "MAIL",
    }
)  # fmt: skip
# aibuddy's own settings (the model settings go with each request; vault, user and worker
# settings never reach a model call) and the terminals' session variables.
IGNORED_PREFIXES = ("AIBUDDY_", "TERM", "ITERM_", "VSCODE_", "KITTY_", "WEZTERM_", "KONSOLE_", "WT_")
# What models._litellm sets when unset, before importing litellm: absent counts as these.
_LITELLM_DEFAULTS = {"LITELLM_MODE": "PRODUCTION", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def relevant_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a model call may depend on: all but IGNORED and IGNORED_PREFIXES."""
    relevant = {
        name: value
        for name, value in environ.items()
        if name not in IGNORED and not name.upper().startswith(IGNORED_PREFIXES)
    }
    for name, default in _LITELLM_DEFAULTS.items():
        relevant.setdefault(name, default)
    return relevant


def _cwd_matters(relevant: Mapping[str, str]) -> bool:
    """Whether the working directory can change a call: litellm may load a `.env` from it (not in
    production mode), or a variable names a relative path that exists here."""
    if relevant.get("LITELLM_MODE", "").upper() != "PRODUCTION":
        return True
    for value in relevant.values():
        if len(value) > 4096:
            continue
        for part in value.split(os.pathsep):
            if part and "://" not in part and not os.path.isabs(part) and os.path.exists(part):
                return True
    return False


def fingerprint(environ: Mapping[str, str]) -> str:
    """The digest of everything in the environment that can change a model call (hex sha256)."""
    relevant = relevant_environment(environ)
    key: list[Any] = sorted(relevant.items())
    if _cwd_matters(relevant):
        try:
            key.append(["cwd", os.getcwd()])
        except OSError:
            key.append(["cwd", None])
    return hashlib.sha256(json.dumps(key).encode("utf-8", "surrogateescape")).hexdigest()


def socket_path(environ: Mapping[str, str], digest: str | None = None) -> Path:
    return private_folder(environ) / f"worker-{(digest or fingerprint(environ))[:16]}.sock"


def asked_idle(environ: Mapping[str, str]) -> float | None:
    """The seconds AIBUDDY_WORKER_IDLE asks an unused worker of environ to stay up (0: start none);
    None when unset or not a number: the worker derives its limit from its start (`derived_idle`)."""
    from ..settings import Settings

    return Settings.read(environ).worker_idle


def derived_idle(start_seconds: float) -> float:
    """The idle limit of a worker nobody asked to keep, from what its start took."""
    return max(start_seconds * IDLE_PER_START, MIN_IDLE)


def complete(
    settings: ModelSettings,
    messages: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any],
    environ: Mapping[str, str],
) -> Any:
    """The model's message through the worker (an object with content and tool_calls), or
    ModelError as in-process (a worker that does not answer within the call's timeout is a
    timeout); PeerUnavailable when there is no worker of ours to ask (one is started if none
    listens) in environ."""
    from ..errors import ModelError

    digest = fingerprint(environ)
    path = socket_path(environ, digest)  # PeerUnavailable: the folder is not private
    request = {
        "op": "complete",
        "env": digest,
        "settings": {name: value for name, value in settings._asdict().items() if name != "worker"},
        "messages": list(messages),
        "options": dict(options),
    }
    try:
        reply = send(path, request, settings.timeout + ANSWER_GRACE, "the worker")
    except NoPeer:
        start(environ)
        raise
    except PeerTimedOut:
        raise ModelError(f"{settings.role} model timed out after {settings.timeout:g}s") from None
    if reply.get("refused"):
        raise PeerUnavailable(str(reply.get("error") or "the worker refused the request"))
    if not reply.get("ok"):
        raise ModelError(str(reply.get("error") or "the model call failed in the worker"))
    message = reply.get("message") or {}
    return SimpleNamespace(content=message.get("content"), tool_calls=message.get("tool_calls") or None)


def start(environ: Mapping[str, str]) -> None:
    """Start a worker for this environment in the background (it exits when idle), unless one is
    starting or serving already. The starter takes the worker's lock and hands it to the worker
    (the same open file, so the same lock), so from this moment until the worker exits every other
    caller finds the lock taken and starts none: two calls at once start one worker."""
    if asked_idle(environ) == 0:
        return
    from ..unix_peer import spawn_holding

    try:
        fd = open_lock(socket_path(environ))
    except (OSError, PeerUnavailable):
        return
    argv = [
        sys.executable, "-m", "aibuddy_cli", "worker", "serve", "--lock-fd", str(fd),
        "--spawned-at", repr(time.time()),  # its start cost, from which it derives its idle limit
    ]  # fmt: skip
    spawn_holding(fd, argv, environ)
