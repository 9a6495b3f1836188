"""`aibuddy watch status|stop`: the vault's watch process, which tells each command what changed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import typer

from . import output
from .context import state_of

app = typer.Typer(
    help="The vault's watch process: what changed in its folders, without a stat per file.",
    no_args_is_help=True,
)


def _asked(ask: Callable[..., Any], environ: Mapping[str, str], root: Path) -> Any:
    """ask(environ, root); NotAllowed (exit 5) when the socket's folder is not private."""
    from ..errors import NotAllowed
    from ..unix_peer import PeerUnavailable

    try:
        return ask(environ, root)
    except PeerUnavailable as exc:
        raise NotAllowed(f"the watch process's folder is not used: {exc}") from None


def _text(running: bool, pid: int | None, folders: int | None) -> str:
    return f"running (pid {pid}, {folders} folders watched)" if running else "not running"


@app.command("status")
def status(ctx: typer.Context, json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Whether a watch process serves this vault."""
    from ..store import watch_client

    state = state_of(ctx, json)
    found = _asked(watch_client.status, state.environ, state.session().vault.root)
    text = _text(found.running, found.pid, found.folders)
    output.render(state.json, found.to_json, lambda: text, lambda: output.emit_text(text))


@app.command("stop")
def stop(ctx: typer.Context, json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Stop this vault's watch process (the next walk of a big folder starts one again)."""
    from ..store import watch_client

    state = state_of(ctx, json)
    found = _asked(watch_client.stop, state.environ, state.session().vault.root)
    text = "stopped" if not found.running else "still running"
    output.render(state.json, found.to_json, lambda: text, lambda: output.emit_text(text))
