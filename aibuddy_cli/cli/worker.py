"""`aibuddy worker status|stop`: the model worker that keeps litellm warm between commands."""

from __future__ import annotations

import typer

from . import output
from .context import state_of

app = typer.Typer(help="The model worker: litellm kept warm between commands.", no_args_is_help=True)


@app.command("status")
def status(ctx: typer.Context, json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Whether a worker serves this environment's model calls."""
    from ..models import worker

    state = state_of(ctx, json)
    found = worker.status(state.environ)
    text = (
        f"running (pid {found.pid}, {found.calls} calls; exits after {found.idle_seconds:g} s unused)"
        if found.running and found.idle_seconds is not None
        else "running" if found.running else "not running"
    )
    output.render(state.json, found.to_json, lambda: text, lambda: output.emit_text(text))


@app.command("stop")
def stop(ctx: typer.Context, json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Stop this environment's worker (the next model call runs in-process and starts one)."""
    from ..models import worker

    state = state_of(ctx, json)
    found = worker.stop(state.environ)
    text = "stopped" if not found.running else "still running"
    output.render(state.json, found.to_json, lambda: text, lambda: output.emit_text(text))


@app.command("serve", hidden=True)
def serve(
    ctx: typer.Context,
    lock_fd: int | None = typer.Option(None, "--lock-fd", hidden=True, help="The lock its starter took."),
    spawned_at: float | None = typer.Option(None, "--spawned-at", hidden=True, help="When it was spawned."),
) -> None:
    """Serve model calls until idle (started by the first model call that finds no worker)."""
    from ..models import worker

    worker.serve(state_of(ctx).environ, lock_fd, spawned_at)
