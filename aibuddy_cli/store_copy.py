"""`aibuddy store copy`: a whole vault from one store to another (its folder, a PostgreSQL
database, another folder), byte for byte, so that a round trip gives the same files and the
vault's git history stays usable as its backup.

What is copied is what the services keep through the store: memory, knowledge, tables, tasks,
the decision logs, the table runs' undo data and the bearer tokens' hashes. What stays with each
host is not: `aibuddy.toml`, the derived indexes, the locks and which process runs what
(`.aibuddy/run`).

Every source file is read, and every target compared, before anything is written: a file the
target already holds with the same bytes is left as it is (so a copy that was interrupted can be
run again), one it holds with other bytes refuses the whole copy (exit 4) unless the copy is a
mirror, and a file that cannot be read (a symlink in a folder vault) refuses it too. Stop the
writers while it runs: a save made meanwhile may or may not be in the copy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from .errors import Conflict
from .storage import WalkableStore
from .tokens import TOKENS_KEY

PARTS = ("memory", "knowledge", "tables", "tasks", ".aibuddy/logs", ".aibuddy/undo")
FILES = (TOKENS_KEY,)


class CopyResult(NamedTuple):
    copied: int  # files written to the target
    unchanged: int  # files the target already held with the same bytes
    removed: int  # files only the target held, deleted by a mirror
    bytes: int  # bytes written

    def to_json(self) -> dict[str, int]:
        return self._asdict()


def vault_keys(store: WalkableStore) -> list[str]:
    """The keys of every file of the vault the store holds."""
    keys = [key for part in PARTS for key in store.walk(part)]
    return keys + [key for key in FILES if store.exists(key)]


def copy_vault(
    source: WalkableStore,
    target: WalkableStore,
    *,
    mirror: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> CopyResult:
    """Copy every vault file of source into target (see the module's docstring). With mirror, the
    target ends up holding exactly the source's vault files: files with other bytes are replaced
    and files the source lacks are deleted (a backup folder kept in git). progress is told
    (files written, files to write) as it goes."""
    wanted: list[tuple[str, bytes]] = []
    unchanged = 0
    different: list[str] = []
    keys = vault_keys(source)
    for key in keys:
        data, _ = source.read(key)
        if target.exists(key):
            if target.read(key)[0] == data:
                unchanged += 1
                continue
            different.append(key)
        wanted.append((key, data))
    if different and not mirror:
        raise Conflict(
            f"the target already holds {len(different)} vault file(s) with other bytes (first: "
            f"{different[0]}); copy into an empty folder or database, or mirror the vault with --mirror"
        )
    extra = sorted(set(vault_keys(target)) - set(keys)) if mirror else []
    replaced = set(different)
    for done, (key, data) in enumerate(wanted, 1):
        target.write(key, data, create=key not in replaced)
        if progress is not None:
            progress(done, len(wanted))
    for key in extra:
        target.delete(key)
    return CopyResult(len(wanted), unchanged, len(extra), sum(len(data) for _, data in wanted))


_TABLE = re.compile(r"^\s*\[\s*([^\]]*?)\s*\]")
_URL = re.compile(r"^\s*url\s*=")


def settings_for_copy(config: str) -> str:
    """aibuddy.toml's text for a folder the vault is copied into: the same settings, without the
    `[store] url` that would send that folder's commands back to the database."""
    lines, table = [], ""
    for line in config.splitlines(keepends=True):
        header = _TABLE.match(line)
        if header:
            table = header[1]
        elif table == "store" and _URL.match(line):
            continue
        lines.append(line)
    return "".join(lines)
