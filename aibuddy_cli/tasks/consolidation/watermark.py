"""The persistent watermark of a task's consolidation: `tasks/<user>/<T>/consolidation.json` holds
the chunk consolidated last (its first and last message, its digest), the rolling summary and,
under `ahead`, the categories a pass with `--only` took further than the others.

Each pass category (`PASS_CATEGORIES`) has its own position: the shared one (`last`: every
switched-on category has consolidated the messages through it) or, when a pass for some
categories only went further, its own record under `ahead`. The shared position is always the
lowest position of the switched-on categories, so a message is never taken as consolidated for
a category that has not seen it, and never given to a category twice."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from ...clock import utc_now
from ..service import TaskMessage, TaskService

WATERMARK = "consolidation.json"
# The categories a pass runs, each with its own position (`task consolidate --only` names them);
# bios, response policies and contact summaries are parts of `contacts`.
PASS_CATEGORIES = ("memory", "contacts", "summaries", "knowledge", "tasks")


class Chunk(NamedTuple):
    """The chunk a category consolidated last."""

    first: int | None  # None: a watermark from before it was kept
    last: int  # the last message consolidated (0 before any pass)
    digest: str | None  # of the chunk's messages (None before any pass, or from an old watermark)

    def to_json(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "digest": self.digest}


NONE = Chunk(None, 0, None)


class Watermark(NamedTuple):
    last: int  # the last message consolidated for every category (0 before any pass)
    summary: str | None  # the rolling summary
    digest: str | None  # of the chunk that ended at `last`
    first: int | None = None  # that chunk's first message
    ahead: Mapping[str, Chunk] = MappingProxyType({})  # categories a pass took past `last`
    summary_through: int | None = None  # the last message the summary covers (None: not kept)

    @property
    def shared(self) -> Chunk:
        return Chunk(self.first, self.last, self.digest)

    def chunk(self, category: str) -> Chunk:
        """The chunk the category consolidated last."""
        found = self.ahead.get(category)
        return found if found is not None and found.last > self.last else self.shared

    def position(self, category: str) -> int:
        """The last message the category has consolidated."""
        return self.chunk(category).last

    @property
    def summary_position(self) -> int:
        """The last message the rolling summary covers: its own pass's, never past the summaries'
        position (which a log that no longer ends with its chunk takes back)."""
        at = self.position("summaries")
        return at if self.summary_through is None else min(self.summary_through, at)

    def positions(self) -> dict[str, int]:
        """The categories past the shared position, and their last message."""
        return {c: self.position(c) for c in PASS_CATEGORIES if self.position(c) > self.last}


def chunk_digest(chunk: Sequence[TaskMessage]) -> str:
    return hashlib.sha256(json.dumps([m.to_json() for m in chunk], ensure_ascii=False).encode()).hexdigest()


def _read_chunk(found: Any) -> Chunk | None:
    if not isinstance(found, dict):
        return None
    first, last, digest = _whole(found.get("first")), _whole(found.get("last")), found.get("digest")
    if last is None:
        return None
    return Chunk(
        first if first is not None and 0 < first <= last else None,
        last,
        digest if isinstance(digest, str) else None,
    )


def _whole(value: Any) -> int | None:
    """value when it is a whole number of 0 or more, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def watermark(tasks: TaskService, task_id: str, *, checked: bool = True) -> Watermark:
    """The task's watermark, read once, whatever the file holds. checked: each position only as
    far as the log still ends, there, with the chunk it was made of (see `_chunk_logged`); the
    shared one otherwise from the start, a category's own otherwise the shared one."""
    found = tasks.document(task_id, WATERMARK) or {}
    shared = _read_chunk(found) or NONE
    summary = found.get("summary")
    raw_ahead = found.get("ahead")
    ahead: dict[str, Chunk] = {}
    for category, value in raw_ahead.items() if isinstance(raw_ahead, dict) else ():
        chunk = _read_chunk(value)
        if category in PASS_CATEGORIES and chunk is not None and chunk.last > shared.last:
            ahead[category] = chunk
    if checked:
        if shared.last and not _chunk_logged(tasks, task_id, shared):
            shared = NONE
        ahead = {c: chunk for c, chunk in ahead.items() if _chunk_logged(tasks, task_id, chunk)}
    return Watermark(
        shared.last,
        summary if isinstance(summary, str) else None,
        shared.digest,
        shared.first,
        MappingProxyType(ahead),
        _whole(found.get("summary_through")),
    )


def _chunk_logged(tasks: TaskService, task_id: str, chunk: Chunk) -> bool:
    """Whether the log, through message `chunk.last`, still ends with the chunk (at most `every`
    messages) the digest was made of. Not so after a git merge renumbered the messages one clone
    added after the other's (README "A vault shared through git") and the watermark came from
    that clone, or after an edit of the log: then no message is taken as consolidated and the
    passes run again from the start (the shield keeps a redo from doing anything twice). Reads the
    log from its end. The chunk's length is the watermark's own (`first`); a watermark from
    before it was kept is tried against the lengths up to the larger of `every` and 50."""
    digest, first, last = chunk.digest, chunk.first, chunk.last
    if digest is None:
        return True  # a watermark from before digests: taken as it is
    if first is not None:  # (a chunk may hold a number twice: two clones' message kept by a merge)
        longest = max(last - first + 1, tasks.vault.config.consolidation.every)
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
    tasks: TaskService,
    task_id: str,
    mark: Watermark,
    chunk: Sequence[TaskMessage],
    digest: str,
    summary: str | None,
    *,
    asked: Iterable[str],
    enabled: Iterable[str],
) -> None:
    """The chunk taken as consolidated for the categories asked, in one atomic write. The shared
    position becomes the lowest of the switched-on categories' (enabled); a category past it keeps
    its own record under `ahead`."""
    done = Chunk(chunk[0].n, chunk[-1].n, digest)
    records = {category: mark.chunk(category) for category in PASS_CATEGORIES}
    records.update({category: done for category in asked})
    counted = [records[c] for c in enabled if c in records] or [done]
    shared = min(counted, key=lambda record: record.last)
    through = done.last if "summaries" in asked else mark.summary_position
    document: dict[str, Any] = {**shared.to_json(), "summary": summary, "summary_through": through}
    document["at"] = utc_now()
    ahead = {c: record.to_json() for c, record in records.items() if record.last > shared.last}
    if ahead:
        document["ahead"] = ahead
    tasks.keep_document(task_id, WATERMARK, document)


def consolidated(tasks: TaskService, task_id: str) -> tuple[int, str | None]:
    """How far the rolling summary has come for the task: the last message it covers, and it."""
    mark = watermark(tasks, task_id)
    return mark.summary_position, mark.summary
