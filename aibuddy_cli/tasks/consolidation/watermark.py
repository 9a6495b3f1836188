"""The persistent watermark of a task's consolidation: `tasks/<user>/<T>/consolidation.json` holds
the chunk consolidated last (its first and last message, its digest) and the rolling summary."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from ...clock import utc_now
from ..service import TaskMessage, TaskService

WATERMARK = "consolidation.json"


class Watermark(NamedTuple):
    last: int  # the last message consolidated (0 before any pass)
    summary: str | None  # the rolling summary
    digest: str | None  # of the chunk that ended at `last`


def chunk_digest(chunk: Sequence[TaskMessage]) -> str:
    return hashlib.sha256(json.dumps([m.to_json() for m in chunk], ensure_ascii=False).encode()).hexdigest()


def watermark(tasks: TaskService, task_id: str, *, checked: bool = True) -> Watermark:
    """The task's watermark, read once, whatever the file holds. checked: only as far as the log
    still ends with the chunk it was made of (see `_chunk_logged`), else from the start."""
    found = tasks.document(task_id, WATERMARK) or {}
    last, summary, digest = found.get("last"), found.get("summary"), found.get("digest")
    mark = Watermark(
        last if isinstance(last, int) and last >= 0 else 0,
        summary if isinstance(summary, str) else None,
        digest if isinstance(digest, str) else None,
    )
    if checked and mark.last and not _chunk_logged(tasks, task_id, found, mark.last):
        mark = mark._replace(last=0, digest=None)
    return mark


def _chunk_logged(tasks: TaskService, task_id: str, found: dict[str, Any], last: int) -> bool:
    """Whether the log, through message `last`, still ends with the chunk (at most `every`
    messages) the watermark's digest was made of. Not so after a git merge renumbered the messages
    one clone added after the other's (README "A vault shared through git") and the watermark came
    from that clone, or after an edit of the log: then no message is taken as consolidated and the
    passes run again from the start (the shield keeps a redo from doing anything twice). Reads the
    log from its end. The chunk's length is the watermark's own (`first`); a watermark from
    before it was kept is tried against the lengths up to the larger of `every` and 50."""
    digest, first = found.get("digest"), found.get("first")
    if not isinstance(digest, str):
        return True  # a watermark from before digests: taken as it is
    if isinstance(first, int) and 0 < first <= last:
        longest = last - first + 1
    else:
        longest = max(tasks.vault.config.consolidation.every, 50)
    parts: list[str] = []
    for message in tasks.messages_from_end(task_id):
        if message.n > last:
            continue
        if not parts and message.n != last:
            return False
        parts.insert(0, json.dumps(message.to_json(), ensure_ascii=False))
        if hashlib.sha256(f"[{', '.join(parts)}]".encode()).hexdigest() == digest:
            return True
        if len(parts) >= longest:
            return False
    return False


def keep_watermark(
    tasks: TaskService, task_id: str, chunk: Sequence[TaskMessage], digest: str, summary: str | None
) -> None:
    """The chunk taken as consolidated, in one atomic write."""
    first, last = chunk[0].n, chunk[-1].n
    document = {"first": first, "last": last, "digest": digest, "summary": summary, "at": utc_now()}
    tasks.keep_document(task_id, WATERMARK, document)


def consolidated(tasks: TaskService, task_id: str) -> tuple[int, str | None]:
    """How far consolidation has come for the task: the last message, and the rolling summary."""
    mark = watermark(tasks, task_id)
    return mark.last, mark.summary
