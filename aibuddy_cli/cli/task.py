"""`aibuddy task …`: tasks and the documents attached to them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from ..tasks.service import Task, TaskList, TaskService
from . import memory_output, output
from .context import AppState, state_of
from .output import render

if TYPE_CHECKING:
    from ..tasks.context import TaskContext

app = typer.Typer(help="Tasks: a goal and the knowledge documents attached to it.", no_args_is_help=True)

JsonOption = typer.Option(False, "--json", help="Print one JSON document on stdout.")


def _tasks(state: AppState) -> TaskService:
    return state.session().tasks


def _task_text(task: Task) -> str:
    attached = ", ".join(task.attached) or "no documents"
    return f"{task.id}\t{task.status}\t{task.created}\t{task.goal}\t[{attached}]"


def _show(state: AppState, task: Task) -> None:
    render(state.json, task.to_json, lambda: _task_text(task), lambda: output.emit_text(_task_text(task)))


@app.command()
def new(
    ctx: typer.Context,
    goal: str = typer.Argument(..., help="What the task is for."),
    plan: str | None = typer.Option(None, "--plan", help="The plan, if there is one already."),
    json: bool = JsonOption,
) -> None:
    """Start a task."""
    state = state_of(ctx, json)
    _show(state, _tasks(state).new(goal, plan))


@app.command("list")
def list_(ctx: typer.Context, json: bool = JsonOption) -> None:
    """Your tasks."""
    state = state_of(ctx, json)
    tasks = _tasks(state).list_tasks()
    state.report_warnings()  # a task file that cannot be read
    text = "\n".join(_task_text(task) for task in tasks)
    render(
        state.json,
        TaskList(tasks).to_json,
        lambda: text,
        lambda: output.emit_text(text),
    )


@app.command()
def show(ctx: typer.Context, task: str = typer.Argument(...), json: bool = JsonOption) -> None:
    """One task, and how far its consolidation has come."""
    from ..tasks.consolidation import TaskShown

    state = state_of(ctx, json)
    session = state.session()
    shown = TaskShown(session.tasks.get(task), session.consolidation.status(task))
    status = shown.consolidation
    text = _task_text(shown.task) + (
        f"\nconsolidated through message {status.through}, {status.pending} pending"
        + (" (a pass is running)" if status.running else "")
    )
    render(state.json, shown.to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def attach(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    docs: list[str] = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Attach documents to a task (they are used once they are ready)."""
    state = state_of(ctx, json)
    from ..tasks.attachments import attach_documents

    _show(state, attach_documents(_tasks(state), state.session().knowledge, task, docs))


@app.command()
def detach(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    docs: list[str] = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Detach documents from a task."""
    state = state_of(ctx, json)
    from ..tasks.attachments import detach_documents

    _show(state, detach_documents(_tasks(state), state.session().knowledge, task, docs))


@app.command("add-message")
def add_message(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    text: str = typer.Argument(..., help="The message text ('-' reads standard input)."),
    role: str = typer.Option(..., "--role", help="user, assistant or tool."),
    tool_calls: str | None = typer.Option(
        None,
        "--tool-calls",
        help='JSON list of the assistant\'s tool calls: [{"function": {"name", "arguments"}}].',
    ),
    json: bool = JsonOption,
) -> None:
    """Append a message to the task's log (it records the documents attached at that moment)."""
    import sys

    from ..tasks.service import parse_tool_calls

    state = state_of(ctx, json)
    content = sys.stdin.read() if text == "-" else text
    calls = None if tool_calls is None else parse_tool_calls(tool_calls, "--tool-calls")
    session = state.session()
    message = session.tasks.add_message(task, role, content, calls)
    session.consolidation.after_message(task, message)  # a background pass when a chunk is complete
    summary = f"{task} message {message.n} ({message.role})"
    render(state.json, message.to_json, lambda: summary, lambda: output.emit_text(summary))


@app.command()
def context(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    query: str | None = typer.Argument(
        None, help="What the next step is about (default: goal + last user message)."
    ),
    json: bool = JsonOption,
) -> None:
    """The working set for the next model call: goal, plan, history, memories, document map."""
    state = state_of(ctx, json)
    assembled = state.session().context.assemble(task, query)
    state.report_warnings()
    text = _context_text(assembled)
    render(state.json, assembled.to_json, lambda: text, lambda: output.emit_text(text))


def _context_text(context: TaskContext) -> str:
    parts = [f"# {context.task.id}: {context.task.goal}"]
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


@app.command()
def consolidate(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the decisions; write nothing."),
    cancel: bool = typer.Option(False, "--cancel", help="Stop the task's running background pass."),
    background: bool = typer.Option(False, "--background", hidden=True),  # started by add-message
    json: bool = JsonOption,
) -> None:
    """Consolidate the task's pending messages into memory, contacts, a summary (model role
    `consolidate`); a background pass runs by itself every [consolidation] every messages."""
    state = state_of(ctx, json)
    consolidator = state.session().consolidation
    if cancel:
        cancelled = consolidator.cancel(task)
        text = "stopped the running pass" if cancelled.cancelled else str(cancelled.reason)
        render(state.json, cancelled.to_json, lambda: text, lambda: output.emit_text(text))
        return
    result = consolidator.run(task, dry_run=dry_run, background=background)
    state.report_warnings()
    lines = [result.reason] if result.reason else []
    for done in result.passes:
        first, last = done.chunk
        lines.append(f"messages {first}-{last}: " + ("applied" if done.applied else "not applied"))
        lines.append(memory_output.decisions_text(done.decisions))
    status = result.status
    lines.append(f"consolidated through message {status.through}, {status.pending} pending")
    text = "\n".join(line for line in lines if line)
    render(state.json, result.to_json, lambda: text, lambda: output.emit_text(text))


@app.command()
def end(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    wait: bool = typer.Option(
        False, "--wait", help="Wait for the extraction model instead of leaving it to the background."
    ),
    background: bool = typer.Option(False, "--background", hidden=True),  # started by task end
    json: bool = JsonOption,
) -> None:
    """Close the task at once; automatic memory extraction over its last messages runs in the
    background when it needs the model (its decisions go to .aibuddy/logs/extraction.jsonl)."""
    from ..tasks.ending import BACKGROUND, TaskEnd, end_task, extract_ended

    state = state_of(ctx, json)
    session = state.session()
    if background:  # the detached extraction of a task that `task end` closed
        tasks = session.tasks
        ended = TaskEnd(tasks.get(task), extract_ended(tasks, session.memory, task))
    else:
        ended = end_task(session.tasks, session.memory, task, wait=wait)
    state.report_warnings()
    later = " (extraction runs in the background)" if ended.extraction_mode == BACKGROUND else ""
    text = f"closed {task}{later}\n" + memory_output.decisions_text(ended.extraction.decisions)
    render(state.json, ended.to_json, lambda: text, lambda: output.emit_text(text))
