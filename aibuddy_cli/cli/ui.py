"""`aibuddy ui`: the vault in a local web page (aibuddy_cli/ui)."""

from __future__ import annotations

from pathlib import Path

import typer

from .context import state_of

app = typer.Typer()


@app.command("ui")
def ui(
    ctx: typer.Context,
    port: int = typer.Option(0, "--port", min=0, max=65535, help="The port to listen on (0: any free one)."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Print the link; do not open a browser."),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Bind elsewhere than loopback (0.0.0.0: every address): then each person signs in with a "
        "token from `aibuddy token create`, which fixes their user. Plain HTTP: put TLS in front.",
    ),
    allow_host: list[str] = typer.Option(
        [], "--allow-host", metavar="NAME[:PORT]", help="A name clients may use besides loopback and --host."
    ),
) -> None:
    """See and steer the vault in a local web page, served on 127.0.0.1 until Ctrl-C: memory
    (recall, each record with its versions, edit, revert, delete), the changes waiting for you,
    knowledge (review with a diff), tables (filter, sort, undo a run) and tasks. It prints a link
    that works once, in one browser; every change goes through the same operations as these
    commands."""
    from ..ui.server import serve_ui

    state = state_of(ctx)
    serve_ui(state.vault_option, state.user_option, state.settings, Path.cwd(), port, not no_browser,
             host, allow_host)  # fmt: skip
