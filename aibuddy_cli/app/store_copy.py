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

from ..errors import Conflict, InvalidInput, NotFound
from ..store.files import FileStore, WalkableStore
from ..tokens import TOKENS_KEY

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
    prepare: Callable[[], None] | None = None,
) -> CopyResult:
    """Copy every vault file of source into target (see the module's docstring). With mirror, the
    target ends up holding exactly the source's vault files: files the source lacks are deleted
    (first, and the folders they leave empty), files with other bytes replaced (a backup folder
    kept in git). prepare runs once everything is read and compared, before anything is written;
    progress is told (files written, files to write) as it goes."""
    wanted: list[tuple[str, bytes]] = []
    unchanged = 0
    different: list[str] = []
    keys = vault_keys(source)
    files: dict[str, bool] = {}  # a folder of the target -> whether a file stands in its place
    for key in keys:
        data, _ = source.read(key)
        if target.exists(key):
            if target.read(key)[0] == data:
                unchanged += 1
                continue
            different.append(key)
        elif _file_in_the_way(target, key, files):
            different.append(key)
        wanted.append((key, data))
    if different and not mirror:
        raise Conflict(
            f"the target already holds {len(different)} vault file(s) with other bytes (first: "
            f"{different[0]}); copy into an empty folder or database, or mirror the vault with --mirror"
        )
    extra = sorted(set(vault_keys(target)) - set(keys)) if mirror else []
    if prepare is not None:
        prepare()
    for key in extra:  # (first: one may stand where a folder of the source's files goes)
        target.delete(key)
    _prune(target, extra)
    for done, (key, data) in enumerate(wanted, 1):
        target.write(key, data, create=key not in different)
        if progress is not None:
            progress(done, len(wanted))
    return CopyResult(len(wanted), unchanged, len(extra), sum(len(data) for _, data in wanted))


def _file_in_the_way(target: WalkableStore, key: str, files: dict[str, bool]) -> bool:
    """Whether the target holds a file where one of key's folders goes (files: what is known)."""
    parts = key.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        if folder not in files:
            files[folder] = target.exists(folder) and _is_file(target, folder)
        if files[folder]:
            return True
    return False


def _is_file(target: WalkableStore, key: str) -> bool:
    try:
        target.read(key)
    except (NotFound, InvalidInput, OSError):
        return False
    return True


def _prune(target: WalkableStore, deleted: list[str]) -> None:
    """Remove the folders of a folder target that deleted files left empty (a task's folder would
    otherwise stay, a task without its files); never a part's or a user's own folder."""
    if not isinstance(target, FileStore):
        return  # (a database has no folders of its own)
    for key in deleted:
        parts = key.split("/")
        for depth in range(len(parts) - 1, 2, -1):
            try:
                target.path("/".join(parts[:depth])).rmdir()
            except (OSError, InvalidInput):
                break  # not empty (or not a folder): nor are the ones above


_TABLE = re.compile(r"^\s*\[\s*([^\]]*?)\s*\]")
_URL = re.compile(r"""^\s*["']?url["']?\s*=""")
# store.url = "…" or store = { url = "…" } outside any table
_STORE_URL = re.compile(r"""^\s*["']?store["']?\s*(?:\.\s*["']?url["']?\s*=|=\s*\{)""")


def settings_for_copy(config: str) -> str:
    """aibuddy.toml's text for a folder the vault is copied into: the same settings, without the
    `[store] url` that would send that folder's commands back to the database (however TOML
    spells it: a `[store]` table, `store.url =`, `store = {…}`). A text from which it cannot be
    taken out this way is refused, never copied with the URL."""
    import tomllib

    lines, table = [], ""
    for line in config.splitlines(keepends=True):
        header = _TABLE.match(line)
        if header:
            table = header[1].strip("\"' ")
        elif (table == "store" and _URL.match(line)) or (table == "" and _STORE_URL.match(line)):
            continue
        lines.append(line)
    text = "".join(lines)
    refused = InvalidInput(
        "aibuddy.toml's [store] url could not be left out of the copy's settings: copy into a vault you made"
    )
    try:
        store = tomllib.loads(text).get("store")
    except tomllib.TOMLDecodeError:  # (a line taken out held part of a value that went on)
        raise refused from None
    if isinstance(store, dict) and "url" in store:
        raise refused
    return text
