"""Which documents a task may carry: only those the user can name. Another user's personal
document, or a proposal the user may not know of, is "no document" (exit 3), like a missing one."""

from __future__ import annotations

from typing import Protocol

from ..knowledge.documents import DocRef
from .service import Task, TaskService


class DocumentNames(Protocol):
    def resolve(self, spec: str, prefer: str = "ready") -> DocRef: ...


def _qualified(knowledge: DocumentNames, spec: str) -> str:
    return knowledge.resolve(spec).qualified


def attach_documents(tasks: TaskService, knowledge: DocumentNames, task_id: str, docs: list[str]) -> Task:
    """Attach documents the user can see; they are used once ready, from the next message on."""
    refs = [_qualified(knowledge, doc) for doc in docs]
    return tasks.set_attached(task_id, dict.fromkeys(refs, True))


def detach_documents(tasks: TaskService, knowledge: DocumentNames, task_id: str, docs: list[str]) -> Task:
    """Detach documents; a reference as the task holds it needs no resolving (it may be gone)."""
    current = tasks.get(task_id).attached
    refs = [doc if doc in current else _qualified(knowledge, doc) for doc in docs]
    return tasks.set_attached(task_id, dict.fromkeys(refs, False))
