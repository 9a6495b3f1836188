"""What consolidation answers: a task's status, the passes of a run, a cancel, `task show`."""

from __future__ import annotations

from typing import Any, NamedTuple

from ...memory.extraction import Decision
from ..service import Task


class Status(NamedTuple):
    through: int  # the last message consolidated
    pending: int  # messages after it
    running: bool  # a pass holds the task's consolidation lock now
    summary: str | None  # the rolling summary

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


class Pass(NamedTuple):
    chunk: list[int]  # [first, last] message numbers
    decisions: list[Decision]
    applied: bool  # the watermark moved past the chunk

    def to_json(self) -> dict[str, Any]:
        return {
            "chunk": self.chunk,
            "applied": self.applied,
            "decisions": [d.to_json() for d in self.decisions],
        }


class Consolidation(NamedTuple):
    task: str
    dry_run: bool
    reason: str | None  # why nothing ran, when nothing did
    passes: list[Pass]
    status: Status

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "dry_run": self.dry_run,
            "reason": self.reason,
            "passes": [p.to_json() for p in self.passes],
            "status": self.status.to_json(),
        }


class Cancelled(NamedTuple):
    task: str
    cancelled: bool  # the task's running pass, proven to be that process, was sent SIGTERM
    reason: str | None = None  # why nothing was signalled

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


class TaskShown(NamedTuple):
    """`task show`: the task, and how far its consolidation has come."""

    task: Task
    consolidation: Status

    def to_json(self) -> dict[str, Any]:
        return {**self.task.to_json(), "consolidation": self.consolidation.to_json()}
