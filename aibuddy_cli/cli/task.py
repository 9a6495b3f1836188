"""`aibuddy task …`: tasks and the documents attached to them."""

from __future__ import annotations

import typer

from ..errors import NotAllowed
from ..knowledge.service import KnowledgeService
from ..tasks.service import Task, TaskService
from . import output
from .context import AppState, state_of
from .output import render

app = typer.Typer(help="Tasks: a goal and the knowledge documents attached to it.", no_args_is_help=True)

JsonOption = typer.Option(False, "--json", help="Print one JSON document on stdout.")


def _tasks(state: AppState) -> TaskService:
    vault, user = state.open()
    return TaskService(vault, user)


def _task_text(task: Task) -> str:
    attached = ", ".join(task.attached) or "no documents"
    return f"{task.id}\t{task.status}\t{task.created}\t{task.goal}\t[{attached}]"


def _show(state: AppState, task: Task) -> None:
    render(state.json, task.to_json, lambda: _task_text(task), lambda: output.emit_text(_task_text(task)))


@app.command()
def new(
    ctx: typer.Context, goal: str = typer.Argument(..., help="What the task is for."), json: bool = JsonOption
) -> None:
    """Start a task."""
    state = state_of(ctx, json)
    _show(state, _tasks(state).new(goal))


@app.command("list")
def list_(ctx: typer.Context, json: bool = JsonOption) -> None:
    """Your tasks."""
    state = state_of(ctx, json)
    tasks = _tasks(state).list()
    text = "\n".join(_task_text(task) for task in tasks)
    render(
        state.json,
        lambda: {"tasks": [t.to_json() for t in tasks]},
        lambda: text,
        lambda: output.emit_text(text),
    )


@app.command()
def show(ctx: typer.Context, task: str = typer.Argument(...), json: bool = JsonOption) -> None:
    """One task."""
    state = state_of(ctx, json)
    _show(state, _tasks(state).get(task))


def _qualified(state: AppState, docs: list[str]) -> list[str]:
    vault, user = state.open()
    knowledge = KnowledgeService(vault, user)
    refs = []
    for doc in docs:
        ref = knowledge.resolve(doc)
        if not knowledge.may_see(ref):
            raise NotAllowed(f"{ref.qualified} is a personal document of {ref.owner}")
        refs.append(ref.qualified)
    return refs


@app.command()
def attach(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    docs: list[str] = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Attach documents to a task (they are used once they are ready)."""
    state = state_of(ctx, json)
    _show(state, _tasks(state).set_attached(task, dict.fromkeys(_qualified(state, docs), True)))


@app.command()
def detach(
    ctx: typer.Context,
    task: str = typer.Argument(...),
    docs: list[str] = typer.Argument(...),
    json: bool = JsonOption,
) -> None:
    """Detach documents from a task."""
    state = state_of(ctx, json)
    tasks = _tasks(state)
    current = tasks.get(task)
    refs = [doc if doc in current.attached else _qualified(state, [doc])[0] for doc in docs]
    _show(state, tasks.set_attached(task, dict.fromkeys(refs, False)))
