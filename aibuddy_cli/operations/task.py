"""The task operations: tasks, their messages and the documents attached to them (see registry.py
for the form). They act on the whole session: a message reaches the consolidator, attaching
checks the documents."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, TypedDict

from .registry import Arg, Effect, Opt, one_or_many, operation
from .shared import TranscriptFile

if TYPE_CHECKING:
    from ..app.session import Session
    from ..tasks.consolidation import Cancelled, Consolidation, Consolidator, TaskShown
    from ..tasks.context import ContextAssembler, TaskContext
    from ..tasks.ending import TaskEnd
    from ..tasks.service import Task, TaskList, TaskMessage, TaskMessageJson, TaskService
    from ..transcripts import Reading

TaskId = Annotated[str, Arg()]
Docs = Annotated[list[str], Arg()]


@operation("task", "new", uses="tasks", effect=Effect.WRITE, tools={"mcp": "task_new"})
def new(
    tasks: TaskService,
    goal: Annotated[str, Arg("What the task is for.")],
    plan: Annotated[str | None, Opt("--plan", help="The plan, if there is one already.")] = None,
) -> Task:
    """Start a task."""
    return tasks.new(goal, plan)


@operation("task", "list", uses="tasks", effect=Effect.READ, idempotent=True, tools={"mcp": "task_list"})
def list_(tasks: TaskService) -> TaskList:
    """Your tasks."""
    from ..tasks.service import TaskList

    return TaskList(tasks.list_tasks())


@operation("task", "show", uses="", effect=Effect.READ, idempotent=True, tools={"mcp": "task_show"})
def show(session: Session, task: TaskId) -> TaskShown:
    """One task, and how far its consolidation has come."""
    from ..tasks.consolidation import TaskShown

    found = session.tasks.get(task)
    session.tasks.plan_warning(found)
    return TaskShown(found, session.consolidation.status(task))


@operation("task", "plan", uses="tasks", effect=Effect.WRITE, idempotent=True, tools={"mcp": "task_plan"})
def plan(
    tasks: TaskService,
    task: TaskId,
    text: Annotated[
        str, Arg("The plan ('-' reads standard input; empty: no plan).", parse=_text_or_stdin, tool="plan")
    ],
) -> Task:
    """Set the task's plan, in place of the one it had (`task show` and `task context` show it)."""
    return tasks.set_plan(task, text)


@operation("task", "status", uses="tasks", effect=Effect.WRITE, idempotent=True, tools={"mcp": "task_status"})
def status(
    tasks: TaskService,
    task: TaskId,
    state: Annotated[
        str,
        Arg(
            "open, blocked (waiting on something outside the conversation) or done.",
            metavar="open|blocked|done",
            tool="status",
            tool_schema={"type": "string", "enum": ["open", "blocked", "done"]},
        ),
    ],
) -> Task:
    """Say where the task's work stands: open, blocked or done (`task end` closes a task).

    Each of the three still takes messages; a closed task given one of them is reopened."""
    return tasks.set_status(task, state)


@operation("task", "attach", uses="", effect=Effect.WRITE, idempotent=True, tools={"mcp": "task_attach"})
def attach(session: Session, task: TaskId, docs: Docs) -> Task:
    """Attach documents to a task (they are used once they are ready)."""
    from ..tasks.attachments import attach_documents

    return attach_documents(session.tasks, session.knowledge, task, docs)


@operation("task", "detach", uses="", effect=Effect.WRITE, idempotent=True, tools={"mcp": "task_detach"})
def detach(session: Session, task: TaskId, docs: Docs) -> Task:
    """Detach documents from a task."""
    from ..tasks.attachments import detach_documents

    return detach_documents(session.tasks, session.knowledge, task, docs)


class MessageAdded(NamedTuple):
    """`task add-message`: the message as the log has it, and its task."""

    task: str
    message: TaskMessage

    def to_json(self) -> TaskMessageJson:
        return self.message.to_json()


def _text_or_stdin(text: str) -> str:
    """'-' reads standard input (only then: a command in a `while read` loop keeps its input)."""
    return sys.stdin.read() if text == "-" else text


def _tool_calls(text: str) -> list[dict[str, Any]]:
    from ..tasks.service import parse_tool_calls

    return parse_tool_calls(text, "--tool-calls")


@operation("task", "add-message", uses="", effect=Effect.WRITE, tools={"mcp": "task_add_message"})
def add_message(
    session: Session,
    task: TaskId,
    text: Annotated[str, Arg("The message text ('-' reads standard input).", parse=_text_or_stdin)],
    role: Annotated[str, Opt("--role", help="user, assistant or tool.")],
    tool_calls: Annotated[
        list[dict[str, Any]] | None,
        Opt(
            "--tool-calls",
            help='JSON list of the assistant\'s tool calls: [{"function": {"name", "arguments"}}].',
            cli_type=str | None,
            parse=_tool_calls,
        ),
    ] = None,
) -> MessageAdded:
    """Append a message to the task's log (it records the documents attached at that moment)."""
    message = session.tasks.add_message(task, role, text, tool_calls)
    session.consolidation.after_message(task, message)  # a background pass when a chunk is complete
    return MessageAdded(task, message)


class ImportedJson(TypedDict):
    task: str
    added: int
    already: int
    turns: int
    shapes: dict[str, int]
    ignored: int
    skipped: int
    problems: list[str]


class Imported(NamedTuple):
    """`task import`: what the transcript held and what of it was new to the task."""

    task: str
    added: list[TaskMessage]
    reading: Reading
    redacted: list[int] = []  # the numbers of the messages added whose credentials were redacted

    def to_json(self) -> ImportedJson:
        reading = self.reading
        return {
            "task": self.task,
            "added": len(self.added),
            "already": len(reading.turns) - len(self.added),
            "turns": len(reading.turns),
            "shapes": reading.shapes,
            "ignored": reading.ignored,
            "skipped": reading.skipped,
            "problems": reading.problems,
        }


def import_turns(session: Session, task: str, reading: Reading) -> Imported:
    """reading's turns as the task's messages (those it has already skipped), then consolidation
    when they complete a chunk: what `task import` and the coding-agent hooks share. An agent's
    log is captured wholesale, tool results and all, and nobody chose what it holds: an import is
    an automatic write, so credential-shaped values in it are redacted (`[redacted: api key]`)
    and a warning names the messages added that held them."""
    from ..redaction.detect import redact, redacted
    from ..tasks.service import NewMessage

    new = [
        NewMessage(t.role, redact(t.content)[0], redacted(t.tool_calls), t.source_id) for t in reading.turns
    ]
    held = {
        turn.source_id
        for turn, message in zip(reading.turns, new, strict=True)
        if (message.content, message.tool_calls) != (turn.content, turn.tool_calls)
    }
    added = session.tasks.add_messages(task, new)
    if added:
        session.consolidation.after_message(task, added[-1])  # a background pass per complete chunk
    numbers = [m.n for m in added if m.source in held]
    if numbers:
        listed = ", ".join(map(str, numbers[:10])) + (
            f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
        )
        session.tasks.warnings.append(
            f"task {task}: credential-shaped values redacted in message(s) {listed} (a transcript import "
            "is an automatic write: such values are never stored)"
        )
    return Imported(task, added, reading, numbers)


@operation("task", "import", uses="", effect=Effect.WRITE, model=False)
def import_(
    session: Session,
    task: TaskId,
    transcript: TranscriptFile,
) -> Imported:
    """Add an agent's transcript to a task as its messages. Turns the task already has (by the
    transcript's own ids) are skipped, so importing a growing transcript again adds only what is
    new; lines no known shape fits are counted and skipped."""
    from ..transcripts import read_transcript as read_turns

    reading = read_turns(transcript.lines)
    session.tasks.warnings.extend(reading.problems)
    return import_turns(session, task, reading)


@operation("task", "context", uses="context", effect=Effect.READ, tools={"mcp": "task_context"})
def context(
    assembler: ContextAssembler,
    task: TaskId,
    query: Annotated[
        str | None, Arg("What the next step is about (default: goal + last user message).")
    ] = None,
) -> TaskContext:
    """The working set for the next model call: goal, plan, history, memories, document map."""
    return assembler.assemble(task, query)


# The categories `task consolidate --only` takes (tasks/consolidation/watermark.py declares them;
# spelled here too so that reading the registry imports no task module).
PASS_CATEGORIES = ("memory", "contacts", "summaries", "knowledge", "tasks")


def _only(values: list[str]) -> list[str] | None:
    """--only's values (repeated, or comma-separated), checked: None for none."""
    from ..tasks.consolidation import only_categories

    return list(only_categories(values)) or None


@operation(
    "task",
    "consolidate",
    uses="consolidation",
    effect=Effect.WRITE,
    tools={"mcp": "task_consolidate"},
)
def consolidate(
    consolidator: Consolidator,
    task: TaskId,
    dry_run: Annotated[bool, Opt("--dry-run", help="Print the decisions; write nothing.")] = False,
    cancel: Annotated[bool, Opt("--cancel", help="Stop the task's running background pass.")] = False,
    only: Annotated[
        list[str] | None,
        Opt(
            "--only",
            help="Only these categories: memory, contacts, summaries, knowledge, tasks (repeatable, "
            "or comma-separated); the others stay pending.",
            metavar="CATEGORY",
            checked=True,
            cli_type=list[str],
            parse=_only,
            tool_schema={"type": "array", "items": {"type": "string", "enum": list(PASS_CATEGORIES)}},
            from_tool=one_or_many,  # (the consolidator checks the names)
        ),
    ] = None,
    background: Annotated[bool, Opt("--background", hidden=True, model=False)] = False,  # by add-message
) -> Consolidation | Cancelled:
    """Consolidate the task's pending messages into memory, contacts, a summary (model role
    `consolidate`); a background pass runs by itself every [consolidation] every messages."""
    if cancel:
        return consolidator.cancel(task)
    return consolidator.run(task, dry_run=dry_run, background=background, only=only)


@operation("task", "end", uses="", effect=Effect.WRITE, tools={"mcp": "task_end"})
def end(
    session: Session,
    task: TaskId,
    wait: Annotated[
        bool, Opt("--wait", help="Wait for the extraction model instead of leaving it to the background.")
    ] = False,
    background: Annotated[bool, Opt("--background", hidden=True, model=False)] = False,  # by task end
) -> TaskEnd:
    """Close the task at once; automatic memory extraction over its last messages runs in the
    background when it needs the model (its decisions go to .aibuddy/logs/extraction.jsonl)."""
    from ..tasks.ending import TaskEnd, end_task, extract_ended

    if background:  # the detached extraction of a task that `task end` closed
        tasks = session.tasks
        return TaskEnd(tasks.get(task), extract_ended(tasks, session.memory, task))
    return end_task(session.tasks, session.memory, task, wait=wait)
