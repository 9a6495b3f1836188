"""Plain-text renderings of task results (standard library only, like `output`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import memory_output
from .rendering import Render

if TYPE_CHECKING:
    from ..operations.task import Imported, MessageAdded
    from ..tasks.consolidation.results import Cancelled, Consolidation, Status, TaskShown
    from ..tasks.context import TaskContext
    from ..tasks.ending import TaskEnd
    from ..tasks.service import Task, TaskList


def task_text(task: Task) -> str:
    attached = ", ".join(task.attached) or "no documents"
    return f"{task.id}\t{task.status}\t{task.created}\t{task.goal}\t[{attached}]"


def status_text(status: Status) -> str:
    """How far consolidation has come: `consolidated through message 4 (contacts through 8), 2 pending`."""
    ahead = ", ".join(f"{category} through {last}" for category, last in status.ahead.items())
    return (
        f"consolidated through message {status.through}"
        + (f" ({ahead})" if ahead else "")
        + f", {status.pending} pending"
        + (" (a pass is running)" if status.running else "")
    )


def planned_text(task: Task) -> str:
    """The task's line, then its plan."""
    return task_text(task) + (f"\nplan:\n{task.plan}" if task.plan else "\n(no plan)")


def shown_text(shown: TaskShown) -> str:
    return planned_text(shown.task) + "\n" + status_text(shown.consolidation)


def context_text(context: TaskContext) -> str:
    status = "" if context.task.status == "open" else f" ({context.task.status})"
    parts = [f"# {context.task.id}: {context.task.goal}{status}"]
    if context.task.plan:
        parts.append(f"## Plan\n{context.task.plan}")
    through, rolling = context.consolidated
    if rolling:
        parts.append(f"## The task so far (consolidated through message {through})\n{rolling}")
    if context.summary:
        first, last = context.summary.covers
        parts.append(f"## Earlier messages {first}-{last} ({context.summary.method})\n{context.summary.text}")
    if context.messages:
        recent = (f"#{m.n} {m.role}: {m.content}" for m in context.messages)
        parts.append("## Recent messages\n" + "\n".join(recent))
    memories = context.memories
    if memories.records:
        shown = (f"### {r.name} [{r.type}] {r.description}\n{r.body.rstrip()}" for r in memories.records)
        parts.append("## Memories\n" + "\n\n".join(shown))
    if memories.already_in_context:
        names = ", ".join(memories.already_in_context)
        parts.append(f"({len(memories.already_in_context)} memory record(s) already in context: {names})")
    if context.documents:
        parts.append(
            "## Documents\n"
            + "\n".join(
                f"- {d.ref.qualified}: {d.title} ({d.section_count} sections)"
                + (f" — {d.summary}" if d.summary else "")
                for d in context.documents
            )
        )
    return "\n\n".join(parts)


def consolidation_text(result: Consolidation | Cancelled) -> str:
    from ..tasks.consolidation.results import Cancelled

    if isinstance(result, Cancelled):  # --cancel
        return "stopped the running pass" if result.cancelled else str(result.reason)
    lines = [result.reason] if result.reason else []
    for done in result.passes:
        first, last = done.chunk
        asked = f" ({', '.join(done.categories)})" if done.categories else ""
        lines.append(f"messages {first}-{last}{asked}: " + ("applied" if done.applied else "not applied"))
        lines.append(memory_output.decisions_text(done.decisions))
    lines.append(status_text(result.status))
    return "\n".join(line for line in lines if line)


def end_text(ended: TaskEnd) -> str:
    from ..tasks.ending import BACKGROUND

    later = " (extraction runs in the background)" if ended.extraction_mode == BACKGROUND else ""
    return f"closed {ended.task.id}{later}\n" + memory_output.decisions_text(ended.extraction.decisions)


def imported_text(imported: Imported) -> str:
    document = imported.to_json()
    return (
        f"{imported.task}: {document['added']} message(s) added, {document['already']} already there "
        f"({imported.reading.summary})"
    )


# --- one Render per task operation (cli/commands.py uses them) ----------------------------------

_TASK = Render["Task"](task_text)

RENDERS: dict[str, Render[Any]] = {
    "task new": _TASK,
    "task list": Render["TaskList"](lambda r: "\n".join(task_text(task) for task in r.tasks)),
    "task show": Render["TaskShown"](shown_text),
    "task plan": Render["Task"](planned_text),
    "task status": _TASK,
    "task attach": _TASK,
    "task detach": _TASK,
    "task add-message": Render["MessageAdded"](
        lambda r: f"{r.task} message {r.message.n} ({r.message.role})"
    ),
    "task import": Render["Imported"](imported_text),
    "task context": Render["TaskContext"](context_text),
    "task consolidate": Render["Consolidation | Cancelled"](consolidation_text),
    "task end": Render["TaskEnd"](end_text),
}
