"""Tasks of one user: tasks/<user>/<task-id>/task.json holds the goal and attached documents."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..clock import utc_now
from ..errors import InvalidInput, NotFound, UsageError
from ..storage import FileStore, Store
from ..vault import Vault, validate_record_name, validate_user_name


class Task(NamedTuple):
    id: str
    goal: str
    created: str
    status: str
    attached: list[str]  # qualified document references: system/<id>, personal/<owner>/<id>

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def validate_task_id(task_id: str) -> str:
    try:
        return validate_record_name(task_id)
    except InvalidInput:
        raise InvalidInput(f"invalid task id {task_id!r}") from None


class TaskService:
    def __init__(self, vault: Vault, user: str, *, store: Store | None = None) -> None:
        self.vault = vault
        self.user = validate_user_name(user)
        self.store: Store = store or FileStore(vault.root, vault.locks_dir())
        self.prefix = f"tasks/{self.user}"

    def _key(self, task_id: str) -> str:
        return f"{self.prefix}/{validate_task_id(task_id)}/task.json"

    def _lock(self):  # noqa: ANN202 - a context manager from the store
        return self.store.lock(f"tasks-{self.user}")

    def _save(self, task: Task) -> None:
        data = json.dumps(task.to_json(), ensure_ascii=False, indent=2) + "\n"
        self.store.write(self._key(task.id), data.encode("utf-8"))

    def get(self, task_id: str) -> Task:
        try:
            data, _ = self.store.read(self._key(task_id))
        except NotFound:
            raise NotFound(f"no task {task_id!r} for user {self.user}") from None
        try:
            raw = json.loads(data)
            return Task(**{field: raw[field] for field in Task._fields})
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{self._key(task_id)}: unreadable task file ({exc})") from None

    def new(self, goal: str) -> Task:
        goal = " ".join(goal.split())
        if not goal:
            raise UsageError("the task goal is empty")
        with self._lock():
            numbers = [int(name[1:]) for name in self._ids() if name[1:].isdigit() and name[0] == "t"]
            task = Task(f"t{max(numbers, default=0) + 1}", goal, utc_now(), "open", [])
            self._save(task)
        return task

    def _ids(self) -> list[str]:
        return self.store.folders(self.prefix)

    def list(self) -> list[Task]:
        tasks = []
        for task_id in self._ids():
            try:
                tasks.append(self.get(task_id))
            except (NotFound, InvalidInput):
                continue
        return sorted(tasks, key=lambda task: (task.created, task.id))

    def set_attached(self, task_id: str, change: Mapping[str, bool]) -> Task:
        """Attach (True) or detach (False) qualified document references."""
        with self._lock():
            task = self.get(task_id)
            attached = [ref for ref in task.attached if change.get(ref, True)]
            attached += [ref for ref, on in change.items() if on and ref not in attached]
            task = task._replace(attached=attached)
            self._save(task)
        return task
