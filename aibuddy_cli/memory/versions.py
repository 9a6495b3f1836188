"""`memory history NAME`: a record's versions from git (when its folder is in a repository), each
with what it said then, and what automatic memory replaced (`.history/NAME.jsonl`)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from ..errors import MalformedRecord
from ..vault import memory_key

if TYPE_CHECKING:
    from .service import MemoryService

MAX_COMMITS = 100  # the newest; a record rewritten more often than that shows its latest versions


class CommitJson(TypedDict):
    commit: str
    date: str
    subject: str
    type: str | None  # None: the record could not be read at that commit
    description: str | None
    body: str | None  # what the record said then


class RecordVersions(NamedTuple):
    path: str
    git: bool
    commits: list[CommitJson]
    replaced: list[dict[str, Any]]  # what automatic memory replaced, newest first (as `memory show`)


def record_versions(memory: MemoryService, name: str) -> RecordVersions:
    """The record's commits, newest first (git follows renames), and its automatic history. The
    record must exist now or have a history (NotFound otherwise, as `memory show`)."""
    key = memory_key(memory.user, name)
    replaced = memory.history(name)
    if not replaced and not memory.store.exists(key):
        memory.show(name)  # NotFound, with the usual message, for a name that was never a record
    file = _file_of(memory.store, key)
    if file is None:
        return RecordVersions(key, False, [], replaced)
    log = _git(file.parent, "log", f"-{MAX_COMMITS}", "--follow", "--format=%H%x00%aI%x00%s", "--", file.name)
    if log is None:
        return RecordVersions(key, False, [], replaced)
    commits = []
    for line in log.splitlines():
        commit, date, subject = line.split("\0", 2)
        commits.append(_commit(file, commit, date, subject, name))
    return RecordVersions(key, True, commits, replaced)


def _commit(file: Path, commit: str, date: str, subject: str, name: str) -> CommitJson:
    from .records import parse_record

    shown = _git(file.parent, "show", f"{commit}:./{file.name}")
    kind = description = body = None
    if shown is not None:
        try:
            record = parse_record(name, shown)
            kind, description, body = record.type, record.description, record.body
        except MalformedRecord:
            pass  # a version git holds that is no record (a conflict committed by hand): said as None
    return {
        "commit": commit,
        "date": date,
        "subject": subject,
        "type": kind,
        "description": description,
        "body": body,
    }


def _file_of(store: Any, key: str) -> Path | None:
    """Where key lives on this machine's disk, through a composed store; None if not on a disk."""
    side = getattr(store, "side", None)
    if side is not None:
        store = side(key)
    path = getattr(store, "path", None)
    return path(key) if path is not None else None


def _git(folder: Path, *args: str) -> str | None:
    """git's output in folder, or None where git is missing or the folder is in no repository."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except (FileNotFoundError, NotADirectoryError):
        return None
    return done.stdout if done.returncode == 0 else None
