"""Ending a task: automatic memory extraction over its last messages, then closing it.

Extraction is a side path: whatever goes wrong in it (the model, a damaged memory folder, an
unwritable log) becomes a warning and a `failed` decision, and the task is closed all the same.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import Conflict, describe_failure
from ..memory.extraction import Decision, ExtractionResult, Extractor, Message
from ..memory.service import MemoryService
from .service import Task, TaskService


class TaskEnd(NamedTuple):
    task: Task
    extraction: ExtractionResult

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task.to_json(), "extraction": self.extraction.to_json()}


def end_task(tasks: TaskService, memory: MemoryService, task_id: str) -> TaskEnd:
    """Extract what is worth remembering from the task's latest turns, then close the task.
    What went wrong on the way is a warning in `tasks.warnings` (a session's sink)."""
    if tasks.get(task_id).status == "closed":
        raise Conflict(f"task {task_id} is already closed")
    warnings = tasks.warnings
    try:
        messages = [Message(m.role, m.content, m.tool_names) for m in tasks.messages(task_id)]
        extraction = Extractor(memory, warnings=warnings).run(messages, source=f"task {task_id}")
    except Exception as exc:  # noqa: BLE001 - extraction never stops the task from closing
        detail = describe_failure(exc)
        warnings.append(f"automatic extraction failed ({detail}); the task is closed all the same")
        extraction = ExtractionResult([], [Decision("extraction", "failed", detail)], [], False)
    return TaskEnd(tasks.end(task_id), extraction)
