"""Ending a task: closing it at once, then automatic memory extraction over its last messages.

The task is closed before anything slow happens. Extraction that needs the model (a cue fired in
the latest turns and the `extract` role has a model) runs in a detached background process, like
consolidation and summaries: `task end` never waits for a model, a Ctrl-C at the terminal does not
cut the extraction short, and its decisions go to `.aibuddy/logs/extraction.jsonl`. What needs no
model (no turns, no cue, the assistant wrote memory itself, no model configured) is decided at
once and reported in the answer; `wait=True` (`task end --wait`) runs the model in the
foreground too.

Extraction is a side path: whatever goes wrong in it (the model, a damaged memory folder, an
unwritable log, a background process that cannot start) becomes a warning and a `failed`
decision, and the task is closed all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import Conflict, Operation, describe_failure
from ..memory.extraction import (
    EXTRACTION_LOG,
    Decision,
    ExtractionResult,
    Extractor,
    Message,
    find_cues,
    latest_exchange_wrote_memory,
    latest_window,
)
from ..memory.service import MemoryService
from .service import Task, TaskService

FOREGROUND = "foreground"  # the extraction in the answer is complete
BACKGROUND = "background"  # it runs on in a detached process; its outcome goes to the log


class TaskEnd(NamedTuple):
    task: Task
    extraction: ExtractionResult
    extraction_mode: str = FOREGROUND  # FOREGROUND or BACKGROUND


def end_task(
    tasks: TaskService,
    memory: MemoryService,
    task_id: str,
    *,
    wait: bool = False,
    start: Callable[[str], None] | None = None,
) -> TaskEnd:
    """Close the task, then extract what is worth remembering from its latest turns: at once
    when no model is needed or `wait`, else in the background (`start(task_id)`, by default a
    detached `aibuddy task end T --background`). What went wrong on the way is a warning in
    `tasks.warnings` (a session's sink)."""
    if tasks.get(task_id).status == "closed":
        raise Conflict(f"task {task_id} is already closed")
    task = tasks.end(task_id)
    spawn = start or _spawn(tasks, memory, ["task", "end", task_id, "--background"])
    extraction, mode = extract_latest(tasks, memory, task_id, wait=wait, start=spawn)
    return TaskEnd(task, extraction, mode)


def extract_latest(
    tasks: TaskService,
    memory: MemoryService,
    task_id: str,
    *,
    wait: bool = False,
    start: Callable[[str], None],
    source: str | None = None,
) -> tuple[ExtractionResult, str]:
    """Extraction over the task's latest turns, and whether it ran here (FOREGROUND) or runs on
    in `start(task_id)` (BACKGROUND, when it needs the model and not `wait`). Never raises for
    extraction itself: a failure is a warning in `tasks.warnings` and a `failed` decision."""
    warnings = tasks.warnings
    source = source or f"task {task_id}"
    try:
        messages = _messages(tasks, task_id)
        extractor = Extractor(memory, warnings=warnings)
        if wait or not _needs_model(memory, messages):
            return extractor.run(messages, source=source), FOREGROUND
        cues = find_cues(latest_window(messages))
    except Exception as exc:  # noqa: BLE001 - extraction never stops the caller
        return _failed(warnings, exc), FOREGROUND
    try:
        start(task_id)
    except Exception as exc:  # noqa: BLE001 - no background process: extract here instead
        detail = describe_failure(exc)
        warnings.append(f"extraction could not start in the background ({detail}); it ran here")
        try:
            return extractor.run(messages, source=source), FOREGROUND
        except Exception as again:  # noqa: BLE001
            return _failed(warnings, again), FOREGROUND
    started = Decision("model", BACKGROUND, f"runs in the background; its decisions go to {EXTRACTION_LOG}")
    decisions = [Decision("cue", "found", ", ".join(cues)), started]
    return ExtractionResult(cues, False, [], decisions), BACKGROUND


def extract_ended(tasks: TaskService, memory: MemoryService, task_id: str) -> ExtractionResult:
    """The extraction of a closed task, in the foreground: what `task end` starts in the
    background. Never raises for extraction itself (see end_task)."""
    if tasks.get(task_id).status != "closed":
        raise Conflict(f"task {task_id} is not closed: ", Operation("task end", task_id), " ends it")
    return extract_now(tasks, memory, task_id)


def extract_now(
    tasks: TaskService, memory: MemoryService, task_id: str, source: str | None = None
) -> ExtractionResult:
    """Extraction over the task's latest turns, here and now (the model too, when one is needed)."""
    try:
        messages = _messages(tasks, task_id)
        return Extractor(memory, warnings=tasks.warnings).run(messages, source=source or f"task {task_id}")
    except Exception as exc:  # noqa: BLE001 - the log records the failure
        return _failed(tasks.warnings, exc)


def _messages(tasks: TaskService, task_id: str) -> list[Message]:
    return [Message(m.role, m.content, m.tool_names) for m in tasks.messages(task_id)]


def _needs_model(memory: MemoryService, messages: list[Message]) -> bool:
    """Whether extraction would call the model: turns to read, a cue in them, no explicit memory
    write of the assistant's, and a model for the extract role (the gates of Extractor.run)."""
    from ..models.calls import ModelCall

    window = latest_window(messages)
    if not window or latest_exchange_wrote_memory(messages) or not find_cues(window):
        return False
    return ModelCall("extract", memory.vault.config.models, memory.settings).configured


def _spawn(tasks: TaskService, memory: MemoryService, args: list[str]) -> Callable[[str], None]:
    def start(task_id: str) -> None:
        from ..background import spawn_aibuddy

        spawn_aibuddy(tasks.vault.root, tasks.user, args, memory.settings)

    return start


def _failed(warnings: Any, exc: Exception) -> ExtractionResult:
    detail = describe_failure(exc)
    warnings.append(f"automatic extraction failed ({detail}); the task is closed all the same")
    return ExtractionResult([], False, [], [Decision("extraction", "failed", detail)])
