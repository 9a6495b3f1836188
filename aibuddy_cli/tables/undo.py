"""Undoing the last natural-language run (`table update` / `table refactor`).

During a run the tables' store is seen through a `SnapshotStore`: before a table file is first
written, moved or deleted, its bytes are kept in `.aibuddy/undo/<run>/<n>` (its absence noted),
and before every change of a file `.aibuddy/undo/<run>.json` notes the hash it is about to
have, beside the hash it has now.
So the record is complete whenever the run ends: a clean exit, an error, Ctrl-C, SIGTERM, SIGHUP
or SIGKILL between any two steps, even between noting a change and making it. A change is
journaled before it is made (changes.py), and the run's first journal line comes after one of
its start (`start_run`); a run with no snapshot changed nothing, so the last run to undo is the
last with one. `table undo` puts the files back as they were before the run, but only when each is
as the run left it (or as it was just before the run's last change of it, or as it was before
the run): a later edit is never lost to an undo (exit 4 then). The files it replaces are kept
in `.aibuddy/undo/<run>.undone.json`, and it refuses (exit 5) a run that changed tables of a
team the user is no longer a member of.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import Conflict, InvalidInput, NotAllowed, NotFound
from ..store.files import Entry, Store, StoreView
from .state import JOURNAL, TablesState

UNDO_FOLDER = ".aibuddy/undo"


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _current(store: Store, key: str) -> bytes | None:
    try:
        return store.read(key)[0]
    except NotFound:
        return None


# A run's id, as its journal lines and folders name it.
RUN_ID = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ-[0-9a-f]{6}")


def check_run_id(run: str) -> str:
    if not RUN_ID.fullmatch(run):
        raise InvalidInput(
            f"{run!r} is not a run id: a run looks like 2026-05-01T09:30:00Z-a1b2c3 (table update and "
            "table refactor print it, and .aibuddy/logs/tables.jsonl names it)"
        )
    return run


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "surrogateescape")


class SnapshotStore(StoreView):
    """A store that keeps each table file's bytes before the run first changes it, and notes
    every change's outcome before making it."""

    def __init__(self, store: Store, run: str, started: Callable[[], None] | None = None) -> None:
        super().__init__(store)
        self.run = run
        self.started = started  # called once, before the run's first journal line
        self.before: dict[str, str | None] = {}  # each file's kept bytes (a key), None: absent
        self.after: dict[str, str | None] = {}  # each file's hash once the change being made is made
        self.prior: dict[str, str | None] = {}  # each file's hash before that change

    @property
    def key(self) -> str:
        return f"{UNDO_FOLDER}/{self.run}.json"

    def _noting(self, outcomes: dict[str, bytes | None]) -> None:
        """Note the files' coming contents (None: absent), keeping their first bytes."""
        outcomes = {key: data for key, data in outcomes.items() if key.startswith("tables/")}
        if not outcomes:
            return
        for key, data in outcomes.items():
            if key not in self.before:
                first = _current(self._store, key)
                kept = None
                if first is not None:
                    kept = f"{UNDO_FOLDER}/{self.run}/{len(self.before) + 1}"
                    self._store.write(kept, first)
                self.before[key] = kept
                self.after[key] = _sha(first)
            self.prior[key] = self.after[key]
            self.after[key] = _sha(data)
        self._save()

    def _save(self) -> None:
        document = {"run": self.run, "kept": self.before, "after": self.after, "prior": self.prior}
        self._store.write(self.key, json.dumps(document, ensure_ascii=False).encode("utf-8"))

    def finish(self) -> None:
        """Note each changed file as the run left it. A file as the notes say: the state before its
        last change (kept for a run killed between noting a change and making it) is no longer
        one undo accepts. A file as it was before its last noted change: that change failed, and
        the run left it so. Anything else is someone else's edit made during the run: the notes
        stay, so undo refuses rather than take that edit for the run's and lose it."""
        changed = False
        for key in self.before:
            actual = _sha(_current(self._store, key))
            if actual == self.after[key] or actual == self.prior.get(key):
                changed = changed or (self.after[key], self.prior.get(key)) != (actual, actual)
                self.after[key] = self.prior[key] = actual
        if changed:
            self._save()

    def append(self, key: str, data: bytes) -> None:
        if key == JOURNAL and self.started is not None:  # the run's first line: its start first
            started, self.started = self.started, None
            try:
                started()
            except BaseException:
                self.started = started
                raise
        super().append(key, data)

    def write(self, key: str, data: bytes, *, create: bool = False) -> Entry:
        self._noting({key: data})
        return super().write(key, data, create=create)

    def move(self, key: str, new_key: str) -> None:
        self._noting({key: None, new_key: _current(self._store, key)})
        super().move(key, new_key)

    def replace(self, key: str, new_key: str) -> None:
        self._noting({key: None, new_key: _current(self._store, key)})
        super().replace(key, new_key)

    def delete(self, key: str) -> None:
        self._noting({key: None})
        super().delete(key)


class Undone(NamedTuple):
    run: str
    files: list[str]


class Run(NamedTuple):
    """A natural-language run as the journal tells it."""

    run: str
    kind: str  # "update" or "refactor"
    started: str  # its first journal line's time (UTC)
    tables: list[str]  # the tables it changed, in the order it first changed them
    changes: int  # the operations it journaled
    undone: bool
    undoable: bool  # it changed a file and is not undone: `table undo RUN` puts the files back


class RunList(NamedTuple):
    """`table runs`: the user's natural-language runs, newest first."""

    user: str
    runs: list[Run]


def runs(state: TablesState) -> RunList:
    """The user's table update and refactor runs from the journal, newest first."""
    entries = _entries(state)
    undone = _undone(entries)
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not _natural(entry) or entry.get("op") == "failed":
            continue
        run = found.setdefault(entry["run"], {"kind": entry["source"], "started": str(entry.get("at") or ""),
                                              "tables": [], "changes": 0})  # fmt: skip
        table = entry.get("table")
        if isinstance(table, str) and table not in run["tables"]:
            run["tables"].append(table)
        run["changes"] += 1
    listed = [
        Run(name, run["kind"], run["started"], run["tables"], run["changes"], name in undone,
            name not in undone and state.store.exists(f"{UNDO_FOLDER}/{name}.json"))  # fmt: skip
        for name, run in found.items()
    ]
    return RunList(state.user, sorted(listed, key=lambda run: run.started, reverse=True))


def undo_last(state: TablesState, run: str | None = None) -> Undone:
    """Restore the files of the user's last natural-language run that is not undone yet, or of
    the run named (the same checks: a file changed since it is never overwritten)."""
    with state.lock():
        run = _last_run(state) if run is None else _named_run(state, run)
        try:
            document = json.loads(state.store.read(f"{UNDO_FOLDER}/{run}.json")[0])
            before = _kept(state.store, document, run)
            after, prior = document["after"], document.get("prior") or {}
            if not all(isinstance(part, dict) for part in (after, prior)):
                raise TypeError
        except (NotFound, ValueError, KeyError, TypeError):
            raise NotFound(f"nothing to undo: the snapshot of run {run} is missing") from None
        _check_access(state, run, before)
        current = {key: _current(state.store, key) for key in before}
        changed = [
            key
            for key, data in before.items()
            if key not in after
            or _sha(current[key]) not in (after[key], prior.get(key, after[key]), _sha(data))
        ]
        if changed:
            raise Conflict(f"not undone: {', '.join(changed)} changed since run {run}")
        replaced = {key: _text(data) for key, data in current.items()}
        kept = f"{UNDO_FOLDER}/{run}.undone.json"
        state.store.write(kept, json.dumps({"run": run, "replaced": replaced}, ensure_ascii=False).encode())
        line = state.journal("undo", "", {"run": run}, {"files": sorted(before), "replaced": kept})
        try:
            for key, data in before.items():
                if data is None:
                    if state.store.exists(key):
                        state.store.delete(key)
                else:
                    state.store.write(key, data)
                if key.endswith(".csv"):
                    state.index.forget_key(key)
        except Exception as error:
            state.journal_failure(line, error)
            raise
    return Undone(run, sorted(before))


def _kept(store: Store, document: dict[str, Any], run: str) -> dict[str, bytes | None]:
    """Each file's bytes before the run (None: it did not exist), read only from the run's own
    folder (a snapshot is a file anyone can edit). Snapshots written before the bytes went to
    files of their own hold them as text under "before"."""
    if "kept" not in document:
        return {
            key: None if text is None else str(text).encode("utf-8", "surrogateescape")
            for key, text in document["before"].items()
        }
    own = re.compile(re.escape(f"{UNDO_FOLDER}/{run}/") + r"\d+")
    for key, kept in document["kept"].items():
        if kept is not None and not (isinstance(kept, str) and own.fullmatch(kept)):
            raise InvalidInput(f"not undone: the snapshot of run {run} keeps {key!r} outside its folder")
    return {key: None if kept is None else store.read(kept)[0] for key, kept in document["kept"].items()}


def _check_access(state: TablesState, run: str, keys: dict[str, Any]) -> None:
    """Every file of the run is a table file the user may change now (their own, or a team's
    they are still a member of): else the whole undo is refused."""
    own = f"tables/personal/{state.user}/"
    for key in keys:
        parts = key.split("/")
        if key.startswith(own) and len(parts) == 4:
            continue
        if len(parts) == 4 and parts[:2] == ["tables", "team"]:
            if parts[2] not in state.access.teams:
                raise NotAllowed(
                    f"not undone: run {run} changed tables of team {parts[2]!r}, and you are not a "
                    "member of it now"
                )
            continue
        raise InvalidInput(f"not undone: the snapshot of run {run} names {key!r}, not one of your tables")


def _entries(state: TablesState) -> list[dict[str, Any]]:
    """The user's journal lines, oldest first (a line that is not JSON is skipped)."""
    try:
        lines = state.store.read(JOURNAL)[0].decode("utf-8", "replace").splitlines()
    except NotFound:
        lines = []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("user") == state.user:
            entries.append(entry)
    return entries


def _undone(entries: list[dict[str, Any]]) -> set[str]:
    """The runs undone: an "undo" line not followed by a "failed" line naming it."""
    failed = {
        (args.get("op"), args.get("at"))
        for entry in entries
        if entry.get("op") == "failed" and isinstance(args := entry.get("args"), dict)
    }
    return {
        str((entry.get("args") or {}).get("run"))
        for entry in entries
        if entry.get("op") == "undo" and ("undo", entry.get("at")) not in failed
    }


def _natural(entry: dict[str, Any]) -> bool:
    """A line of a natural-language run (update or refactor)."""
    run = entry.get("run")  # (a line edited by hand to name no run id is not one)
    natural = entry.get("source") in ("update", "refactor")
    return natural and isinstance(run, str) and bool(RUN_ID.fullmatch(run))


def undone_runs(state: TablesState) -> set[str]:
    """The user's runs that were undone."""
    return _undone(_entries(state))


def _named_run(state: TablesState, run: str) -> str:
    entries = _entries(state)
    if run in _undone(entries):
        raise NotFound(f"nothing to undo: run {run} is undone already")
    if not any(_natural(entry) and entry["run"] == run for entry in entries):
        raise NotFound(f"nothing to undo: no table update or refactor of yours changed a table in run {run}")
    return run


def _last_run(state: TablesState) -> str:
    """The user's last run not undone yet that changed a file (has a snapshot: a run journals a
    change before its snapshot notes it, and one that failed there changed nothing)."""
    entries = _entries(state)
    undone = _undone(entries)
    seen: set[str] = set()
    for entry in reversed(entries):
        if _natural(entry) and entry["run"] not in undone | seen:
            seen.add(entry["run"])
            if state.store.exists(f"{UNDO_FOLDER}/{entry['run']}.json"):
                return str(entry["run"])
    raise NotFound("nothing to undo: no table update or refactor of yours is left to undo")
