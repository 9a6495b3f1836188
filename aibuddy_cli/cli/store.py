"""`aibuddy store copy --to postgresql://…|DIR`: the vault's files from the store it uses now into a
database or a folder (app/store_copy.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..errors import InvalidInput
from . import output
from .context import state_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..app.session import Session
    from ..store.files import WalkableStore

app = typer.Typer(help="Where the vault's files are kept: its folder or a PostgreSQL database.")

URL_SCHEMES = ("postgresql://", "postgres://")


@app.callback()
def store() -> None:
    """Where the vault's files are kept: its folder or a PostgreSQL database."""


@app.command()
def copy(
    ctx: typer.Context,
    to: str = typer.Option(
        ...,
        "--to",
        help="A postgresql:// URL, or a folder: a new one becomes a vault with this vault's settings.",
    ),
    mirror: bool = typer.Option(
        False,
        "--mirror",
        help="Make the target hold exactly this vault's files: replace the ones with other bytes, "
        "delete the ones this vault lacks (a backup folder kept in git).",
    ),
    json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Copy every file of the vault (memory, knowledge, tables, tasks, logs, tokens) from the store it
    uses now into a PostgreSQL database or a folder, byte for byte. Files the target holds with the
    same bytes are kept (run it again after an interruption); any with other bytes refuse the whole
    copy (exit 4) unless --mirror. Stop the vault's writers while it runs."""
    from ..app.store_copy import copy_vault

    state = state_of(ctx, json)
    session = state.session()
    source = _source(session)
    target, where, prepare = _target(session, to, source)
    terminal = sys.stderr.isatty() and not state.json

    def progress(done: int, total: int) -> None:
        if terminal and (done == total or done % 200 == 0):
            sys.stderr.write(f"\rcopied {done} of {total} file(s)")
            sys.stderr.write("\n" if done == total else "")
            sys.stderr.flush()

    result = copy_vault(source, target, mirror=mirror, progress=progress, prepare=prepare)
    text = (
        f"copied {result.copied} file(s), {result.bytes} bytes, to {where}"
        + (f"; {result.unchanged} already there" if result.unchanged else "")
        + (f"; removed {result.removed} it held that this vault has not" if result.removed else "")
    )
    output.render(
        state.json,
        lambda: {**result.to_json(), "to": where},
        lambda: text,
        lambda: output.emit_text(text),
    )


def _source(session: Session) -> WalkableStore:
    from ..store.files import FileStore
    from ..store.postgres import PgStore

    if not isinstance(session.store, FileStore | PgStore):
        raise InvalidInput(
            "store copy reads a vault folder or a database; a team vault keeps each person's files "
            "in their own vault, so copy the shared folder with git"
        )
    return session.store


def _target(
    session: Session, to: str, source: WalkableStore
) -> tuple[WalkableStore, str, Callable[[], None] | None]:
    """The store --to names, how to name it in messages (a URL without its password), and what
    to do once every file is read and compared, before the first write (make a new folder a
    vault: a refused copy leaves nothing behind)."""
    from ..app.store_copy import settings_for_copy
    from ..store.files import FileStore
    from ..store.postgres import PgStore, shown
    from ..vault import CONFIG_FILE, Vault, init_vault

    if not to.strip():
        raise InvalidInput("--to is empty: give a postgresql:// URL or a folder")
    if to.startswith(URL_SCHEMES):
        if isinstance(source, PgStore) and source.url == to:
            raise InvalidInput("--to names the database this vault already uses")
        return PgStore(to), shown(to), None
    folder = Path(to).expanduser().resolve()
    own = session.vault.root
    if folder == own or folder.is_relative_to(own):
        raise InvalidInput(f"--to {folder} is this vault's folder or inside it: copy to a folder of its own")
    if (folder / CONFIG_FILE).is_file():
        vault = Vault.open(folder, session.settings.environ)
        if vault.config.store.url:
            raise InvalidInput(f"--to {folder}: that vault keeps its files in a database ([store] url)")
        if vault.config.team_vault:
            raise InvalidInput(f"--to {folder}: a team vault's shared folder is not a copy's place")
        return FileStore(vault.root, vault.locks_dir()), str(folder), None
    # (a folder with nothing but a repository, `git init ~/backup`, is empty)
    if folder.exists() and (not folder.is_dir() or any(p.name != ".git" for p in folder.iterdir())):
        raise InvalidInput(f"--to {folder}: not an aibuddy vault and not an empty folder")
    settings = settings_for_copy((own / CONFIG_FILE).read_text(encoding="utf-8"))

    def prepare() -> None:
        init_vault(folder, session.user, session.settings.environ)
        (folder / CONFIG_FILE).write_text(settings, encoding="utf-8")

    # (no lock is taken by a copy: the locks' folder is a placeholder until the folder is a vault)
    return FileStore(folder, folder / ".aibuddy" / "locks"), str(folder), prepare
