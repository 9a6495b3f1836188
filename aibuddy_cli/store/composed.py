"""One store over two roots: a team vault's shared folder and the current user's personal vault.

In a team vault (one with `[teams.*]` in aibuddy.toml) the vault folder is a git repository that
every member pushes to the team's remote. What belongs to one person must never be in it: a
`.gitignore` is advice anyone can override (`git add -f`, a file already tracked), a filter in
aibuddy only hides what git still carries. So a person's files are not written there at all:
`RoutedStore` sends the keys under the current user's personal prefixes

    memory/<user>/   tasks/<user>/   knowledge/personal/<user>/   tables/personal/<user>/

to a second `FileStore` rooted at the user's personal vault (a folder on their own machine, by
default `$XDG_DATA_HOME/aibuddy/vaults/<vault id>/`, which they may make a git repository of its
own with a private remote), and every other key (system documents, team tables, the derived
`.aibuddy/` caches and logs, which git ignores) to the shared vault. The keys are the same on both
sides, so the personal vault has the vault's own layout and the services never know which root a
file is in: they keep using the `Store` protocol.

What the composition means for the protocol's calls:
- A key is personal when it is one of the prefixes or lies under one; routing is by key only.
  Another user's prefixes (`memory/bob/` while alice works) go to the shared side, where a vault
  that was shared before it became a team vault may still hold them (`aibuddy doctor` reports
  them); the current user's leftovers there are not read: the personal side is the only one.
- `folders(prefix)` of a folder above a personal prefix joins both sides' names, and the name
  of the user's own folder is listed only when the personal side has it. So `folders("memory")`
  and `folders("knowledge/personal")` list the user's own folder once, from where it really is.
- `lock(name)` takes the shared store's lock and then the personal one's, always in that order:
  a lock guards writers of both sides (a table lock covers personal and team tables; two clones
  of one vault on one machine share the personal vault, and its locks are beside it).
- `move` and `replace` across the two roots copy, then delete the source (one root cannot
  rename into another; the copy is complete before the source goes).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .files import Entry, FileStore, Store, check_key
from .folder_watch import Changes

# The folders of a vault that hold one person's files, each followed by the user's name.
PERSONAL_FOLDERS = ("memory", "tasks", "knowledge/personal", "tables/personal")


def personal_prefixes(user: str) -> tuple[str, ...]:
    """The key prefixes that are user's alone (user validated by the caller)."""
    return tuple(f"{folder}/{user}" for folder in PERSONAL_FOLDERS)


class RoutedStore:
    """The `Store` of one user in a team vault: personal keys to `personal`, the rest to `shared`."""

    def __init__(self, shared: Store, personal: Store, user: str) -> None:
        self.shared = shared
        self.personal = personal
        self.user = user
        self.prefixes = personal_prefixes(user)

    def is_personal(self, key: str) -> bool:
        return any(key == prefix or key.startswith(prefix + "/") for prefix in self.prefixes)

    def side(self, key: str) -> Store:
        """The store that holds key."""
        return self.personal if self.is_personal(check_key(key)) else self.shared

    # --- reading -----------------------------------------------------------------------

    def scan(self, prefix: str, suffix: str | tuple[str, ...]) -> list[Entry]:
        return self.side(prefix).scan(prefix, suffix)

    def changes(self, prefix: str, since: Collection[str]) -> Changes:
        return self.side(prefix).changes(prefix, since)

    def folders(self, prefix: str) -> list[str]:
        store = self.side(prefix)
        if store is self.personal:
            return store.folders(prefix)
        below = [p[len(prefix) + 1 :].split("/", 1) for p in self.prefixes if p.startswith(prefix + "/")]
        if not below:
            return self.shared.folders(prefix)
        names = set(self.shared.folders(prefix))
        mine = set(self.personal.folders(prefix))
        for parts in below:
            child = parts[0]
            if len(parts) == 1:  # prefix is the folder holding the user's own: that one from personal
                names.discard(child)
            if child in mine:
                names.add(child)
        return sorted(names)

    def read(self, key: str) -> tuple[bytes, Entry]:
        return self.side(key).read(key)

    def read_many(self, keys: Iterable[str]) -> dict[str, tuple[bytes, Entry]]:
        keys = list(keys)
        mine = [key for key in keys if self.is_personal(check_key(key))]
        theirs = [key for key in keys if not self.is_personal(key)]
        return {**self.personal.read_many(mine), **self.shared.read_many(theirs)}

    def stat(self, key: str) -> Entry:
        return self.side(key).stat(key)

    def exists(self, key: str) -> bool:
        return self.side(key).exists(key)

    # --- writing -----------------------------------------------------------------------

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        return self.side(key).write(key, data, create=create)

    def append(self, key: str, data: bytes) -> None:
        self.side(key).append(key, data)

    def delete(self, key: str) -> None:
        self.side(key).delete(key)

    def move(self, key: str, new_key: str) -> None:
        self._rename(key, new_key, over=False)

    def replace(self, key: str, new_key: str) -> None:
        self._rename(key, new_key, over=True)

    def _rename(self, key: str, new_key: str, *, over: bool) -> None:
        """A rename on one side; across the two, a copy (a Conflict first when not over and
        new_key exists) and then the source's removal, so a failure never loses the file."""
        source, target = self.side(key), self.side(new_key)
        if source is target:
            (source.replace if over else source.move)(key, new_key)
            return
        data, _ = source.read(key)
        target.write(new_key, data, create=not over)
        source.delete(key)

    @property
    def locks_dir(self) -> Path | None:
        """Where the lock taken first (the shared side's) is kept, for whoever asks who holds one."""
        locks = getattr(self.shared, "locks_dir", None)
        return locks if isinstance(locks, Path) else None

    @contextmanager
    def lock(self, name: str, timeout: float = 30.0) -> Iterator[None]:
        with self.shared.lock(name, timeout), self.personal.lock(name, timeout):
            yield


def local_folders(store: Store, prefix: str) -> list[Path]:
    """The folders on disk that hold the keys under prefix (the knowledge watcher watches folders,
    not keys): one for a FileStore, the shared one and the user's personal ones below it for a
    RoutedStore, none for a store that is not on disk."""
    if isinstance(store, RoutedStore):
        if store.is_personal(check_key(prefix)):
            return local_folders(store.personal, prefix)
        mine = [p for p in store.prefixes if p.startswith(prefix + "/")]
        theirs = [folder for p in mine for folder in local_folders(store.personal, p)]
        return local_folders(store.shared, prefix) + theirs
    if isinstance(store, FileStore):
        return [store.root.joinpath(*check_key(prefix).split("/"))]
    return []
