"""Undoing the last natural-language run (`table update` / `table refactor`).

During a run the tables' store is seen through a `SnapshotStore`: before a table file is first
written, moved or deleted, its bytes (or its absence) are kept in `.aibuddy/undo/<run>.json`,
and at the end the hash of each file as the run left it. `table undo` puts the files back as they
were before the run, but only when none of them changed since: a later edit is never lost to an
undo (exit 4 then).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple

from ..errors import Conflict, NotFound
from ..storage import Entry, Store, StoreView
from .state import JOURNAL, TablesState

UNDO_FOLDER = ".aibuddy/undo"


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _current(store: Store, key: str) -> bytes | None:
    try:
        return store.read(key)[0]
    except NotFound:
        return None


class SnapshotStore(StoreView):
    """A store that keeps each table file's bytes before the run first changes it."""

    def __init__(self, store: Store, run: str) -> None:
        super().__init__(store)
        self.run = run
        self.before: dict[str, str | None] = {}

    @property
    def key(self) -> str:
        return f"{UNDO_FOLDER}/{self.run}.json"

    def _keep(self, *keys: str) -> None:
        new = [key for key in keys if key.startswith("tables/") and key not in self.before]
        if not new:
            return
        for key in new:
            data = _current(self._store, key)
            self.before[key] = None if data is None else data.decode("utf-8", "surrogateescape")
        self._save({})

    def _save(self, after: dict[str, str | None]) -> None:
        document = {"run": self.run, "before": self.before, "after": after}
        self._store.write(self.key, json.dumps(document, ensure_ascii=False).encode("utf-8"))

    def finish(self) -> None:
        """Note each changed file as the run left it, so an undo can tell a later edit."""
        if self.before:
            self._save({key: _sha(_current(self._store, key)) for key in self.before})

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        self._keep(key)
        return super().write(key, data, create=create)

    def move(self, key: str, new_key: str) -> None:
        self._keep(key, new_key)
        super().move(key, new_key)

    def replace(self, key: str, new_key: str) -> None:
        self._keep(key, new_key)
        super().replace(key, new_key)

    def delete(self, key: str) -> None:
        self._keep(key)
        super().delete(key)


class Undone(NamedTuple):
    run: str
    files: list[str]

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def undo_last(state: TablesState) -> Undone:
    """Restore the files of the user's last natural-language run that is not undone yet."""
    with state.lock():
        run = _last_run(state)
        try:
            document = json.loads(state.store.read(f"{UNDO_FOLDER}/{run}.json")[0])
            before, after = document["before"], document["after"]
        except (NotFound, ValueError, KeyError, TypeError):
            raise NotFound(f"nothing to undo: the snapshot of run {run} is missing") from None
        changed = [key for key, digest in after.items() if _sha(_current(state.store, key)) != digest]
        if changed or set(after) != set(before):
            raise Conflict(f"not undone: {', '.join(changed) or 'the run'} changed since run {run}")
        for key, text in before.items():
            if text is None:
                if state.store.exists(key):
                    state.store.delete(key)
            else:
                state.store.write(key, text.encode("utf-8", "surrogateescape"))
            if key.endswith(".csv"):
                state.index.forget_key(key)
        state.journal("undo", "", {"run": run}, {"files": sorted(before)})
    return Undone(run, sorted(before))


def _last_run(state: TablesState) -> str:
    try:
        lines = state.store.read(JOURNAL)[0].decode("utf-8", "replace").splitlines()
    except NotFound:
        lines = []
    undone: set[str] = set()
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("user") != state.user:
            continue
        if entry.get("op") == "undo":
            undone.add(str(entry.get("args", {}).get("run")))
        elif (
            entry.get("run") and entry.get("source") in ("update", "refactor") and entry["run"] not in undone
        ):
            return str(entry["run"])
    raise NotFound("nothing to undo: no table update or refactor of yours is left to undo")
