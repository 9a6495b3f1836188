"""What consolidation answers: a task's status, the passes of a run, a cancel, `task show`."""

from __future__ import annotations

from typing import NamedTuple, TypedDict

from ...jsonvalues import to_json
from ...memory.extraction import Decision, DecisionJson
from ..service import Task, TaskJson


class Status(NamedTuple):
    through: int  # the last message consolidated for every category switched on
    pending: int  # messages after it
    running: bool  # a pass holds the task's consolidation lock now
    summary: str | None  # the rolling summary
    ahead: dict[str, int] = {}  # categories a pass with --only took further: their last message


class PassJson(TypedDict):
    chunk: list[int]
    categories: list[str]
    applied: bool
    decisions: list[DecisionJson]


class Pass(NamedTuple):
    chunk: list[int]  # [first, last] message numbers
    decisions: list[Decision]
    applied: bool  # the watermark moved past the chunk
    categories: list[str] = []  # the categories the pass asked for

    def to_json(self) -> PassJson:
        return {
            "chunk": self.chunk,
            "categories": list(self.categories),
            "applied": self.applied,
            "decisions": [d.to_json() for d in self.decisions],
        }


class Consolidation(NamedTuple):
    task: str
    dry_run: bool
    reason: str | None  # why nothing ran, when nothing did
    passes: list[Pass]
    status: Status


class Cancelled(NamedTuple):
    task: str
    cancelled: bool  # the task's running pass, proven to be that process, was sent SIGTERM
    reason: str | None = None  # why nothing was signalled


class TaskShownJson(TaskJson):
    consolidation: Status


class TaskShown(NamedTuple):
    """`task show`: the task, and how far its consolidation has come."""

    task: Task
    consolidation: Status

    def to_json(self) -> TaskShownJson:
        return {**self.task.to_json(), "consolidation": to_json(self.consolidation)}
