"""Writing another program's file (a client's configuration, Claude Code's settings): the change
shown and asked first on a terminal (on stderr: stdout may be JSON); without one, --yes."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import typer

from ..errors import Aborted, UsageError
from .context import stdin_is_terminal


def write_after_asking(
    path: Path, current: str | None, changed: str, yes: bool, prepare: Callable[[], object] | None = None
) -> None:
    """Write changed to path once the person agreed (or said --yes); prepare runs between the two,
    so that a refusal changes nothing at all."""
    from ..store.files import atomic_write

    before, after = (current or "").splitlines(keepends=True), changed.splitlines(keepends=True)
    change = "".join(difflib.unified_diff(before, after, str(path), str(path)))
    if not yes:
        if not stdin_is_terminal():
            raise UsageError(f"refusing to write {path} without --yes when stdin is not a terminal")
        typer.echo(change, err=True)
        if not typer.confirm(f"Write {path}?", default=False, err=True):
            raise Aborted(f"{path} was not written")
    if prepare is not None:
        prepare()
    # A settings file kept as a link (into a dotfiles repository) is written where it leads: the
    # replace would otherwise put a plain file in the link's place.
    atomic_write(path.resolve() if path.is_symlink() else path, changed.encode("utf-8"))
