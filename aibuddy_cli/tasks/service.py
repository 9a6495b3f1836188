"""Tasks of one user, under tasks/<user>/<task-id>/.

task.json holds the goal, plan, status, attached documents and which memory records the task's
context has already delivered; messages.jsonl is the append-only message log (never truncated:
compaction only changes what the assembled context shows).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict

from ..clock import utc_now
from ..errors import Conflict, InvalidInput, NotFound, Operation, UsageError
from ..store.files import Store
from ..vault import Vault, validate_record_name, validate_user_name

ROLES = ("user", "assistant", "tool")
# A task's status: where its work stands (open, blocked: waiting on something outside the
# conversation, done: its goal reached), all of which take messages, or closed (by `task end`: no
# more messages). `task status` sets the first three, and reopens a closed task.
WORK_STATUSES = ("open", "blocked", "done")
STATUSES = (*WORK_STATUSES, "closed")
MAX_PLAN_CHARS = 20_000


class TaskJson(TypedDict):
    id: str
    goal: str
    created: str
    status: str
    attached: list[str]
    plan: str | None
    recalled: dict[str, int]
    messages: int | None
    in_use: list[str] | None


class Task(NamedTuple):
    id: str
    goal: str
    created: str
    status: str  # open | blocked | done | closed (STATUSES)
    attached: list[str]  # qualified document references: system/<id>, personal/<owner>/<id>
    plan: str | None = None
    recalled: dict[str, int] = {}  # memory record -> message count when the context delivered it
    messages: int | None = None  # messages added (None: a task file from before it was counted)
    in_use: list[str] | None = None  # the attachments recorded with the latest message

    def to_json(self) -> TaskJson:
        return {
            "id": self.id,
            "goal": self.goal,
            "created": self.created,
            "status": self.status,
            "attached": self.attached,
            "plan": self.plan,
            "recalled": self.recalled,
            "messages": self.messages,
            "in_use": self.in_use,
        }


class TaskList(NamedTuple):
    """`task list`: the user's tasks, oldest first."""

    tasks: list[Task]


class TaskMessageJson(TypedDict):
    n: int
    role: str
    content: str
    at: str
    attached: list[str]
    tool_calls: NotRequired[list[dict[str, Any]]]  # as the model gave them; left out when none
    source: NotRequired[str]  # the id a transcript gave it (an import); left out when none


class NewMessage(NamedTuple):
    """A message to add: what `task add-message` or a transcript turn gives."""

    role: str
    content: str
    tool_calls: list[dict[str, Any]] | None = None
    source: str | None = None


class TaskMessage(NamedTuple):
    n: int
    role: str
    content: str
    at: str
    attached: list[str]  # the task's documents when the message was added
    tool_calls: list[dict[str, Any]] | None = None
    source: str | None = None  # the id of the transcript's turn it was imported from

    def to_json(self) -> TaskMessageJson:
        data: TaskMessageJson = {
            "n": self.n,
            "role": self.role,
            "content": self.content,
            "at": self.at,
            "attached": self.attached,
        }
        if self.tool_calls is not None:
            data["tool_calls"] = self.tool_calls
        if self.source is not None:
            data["source"] = self.source
        return data

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(
            str(call.get("function", {}).get("name", ""))
            for call in self.tool_calls or []
            if isinstance(call, dict) and isinstance(call.get("function"), dict)
        )


def parse_tool_calls(text: str, source: str = "tool calls") -> list[dict[str, Any]]:
    """An assistant turn's tool calls from JSON text: a list of objects, in the OpenAI shape."""
    try:
        calls = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{source} is not JSON: {exc}") from None
    if not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls):
        raise InvalidInput(f"{source} must be a JSON list of objects")
    return calls


def parse_message(line: bytes) -> TaskMessage:
    """One line of a message log; ValueError or TypeError when it is not a message."""
    message = TaskMessage(**json.loads(line))
    if not isinstance(message.content, str) or message.role not in ROLES:
        raise TypeError("content must be text and role user, assistant or tool")
    if _count(message.n) is None or message.n < 1:
        raise TypeError("n must be a whole number from 1")
    calls = message.tool_calls
    if calls is not None and not (isinstance(calls, list) and all(isinstance(c, dict) for c in calls)):
        raise TypeError("tool_calls must be a list of objects")
    if message.source is not None and not isinstance(message.source, str):
        raise TypeError("source must be text")
    if not isinstance(message.attached, list):
        message = message._replace(attached=[])
    return message


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _references(value: Any) -> list[str] | None:
    return list(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _plan(plan: str | None) -> str | None:
    """A plan as kept: its surrounding white space stripped, None when nothing is left; InvalidInput
    past MAX_PLAN_CHARS (task.json is written again with every message)."""
    if plan is None or not plan.strip():
        return None
    plan = plan.strip()
    if len(plan) > MAX_PLAN_CHARS:
        raise InvalidInput(f"the plan has {len(plan):,} characters; at most {MAX_PLAN_CHARS:,}")
    return plan


def _work_status(status: str, task_id: str) -> None:
    if status == "closed":
        closing = Operation("task end", task_id)
        raise UsageError("a task is closed by ", closing, ", which also extracts memory")
    if status not in WORK_STATUSES:
        raise InvalidInput(f"invalid status {status!r}: use {', '.join(WORK_STATUSES)}")


CONFLICT_LINES = ("<<<<<<< ", "=======", ">>>>>>> ")


def has_conflict(text: str) -> bool:
    """Whether text holds git's three conflict markers, each at the start of a line."""
    lines = text.split("\n")
    return all(any(line.startswith(marker) for line in lines) for marker in CONFLICT_LINES)


def validate_task_id(task_id: str) -> str:
    try:
        return validate_record_name(task_id)
    except InvalidInput:
        raise InvalidInput(f"invalid task id {task_id!r}") from None


class TaskService:
    def __init__(self, vault: Vault, user: str, *, store: Store, warnings: list[str]) -> None:
        """store, warnings: the session's (warnings: where damaged task files and message lines
        are reported), as the other services take them."""
        self.vault = vault
        self.user = validate_user_name(user)
        self.store = store
        self.prefix = f"tasks/{self.user}"
        self.warnings = warnings

    def _key(self, task_id: str, name: str = "task.json") -> str:
        return f"{self.prefix}/{validate_task_id(task_id)}/{name}"

    def log_key(self, task_id: str) -> str:
        """Where the task's message log is, in the store."""
        return self._key(task_id, "messages.jsonl")

    def lock(self):  # noqa: ANN201 - a context manager from the store
        return self.store.lock(f"tasks-{self.user}")

    def save(self, task: Task) -> None:
        data = json.dumps(task.to_json(), ensure_ascii=False, indent=2) + "\n"
        self.store.write(self._key(task.id), data.encode("utf-8"))

    def get(self, task_id: str) -> Task:
        try:
            data, _ = self.store.read(self._key(task_id))
        except NotFound:
            raise NotFound(f"no task {task_id!r} for user {self.user}") from None
        try:
            raw = json.loads(data)
            required = {field: raw[field] for field in ("id", "goal", "created", "status", "attached")}
            task = Task(
                **required,
                plan=raw.get("plan"),
                recalled=dict(raw.get("recalled") or {}),
                messages=_count(raw.get("messages")),
                in_use=_references(raw.get("in_use")),
            )
            if not isinstance(task.attached, list) or not all(isinstance(a, str) for a in task.attached):
                raise TypeError("attached must be a list of document references")
            if not isinstance(task.goal, str) or task.status not in STATUSES:
                raise TypeError(f"goal must be text and status one of {', '.join(STATUSES)}")
            if task.plan is not None and not isinstance(task.plan, str):
                raise TypeError("plan must be text or null")
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{self._key(task_id)}: unreadable task file ({exc})") from None
        if task.messages is not None:
            # Never fewer than the log's last number: when two clones added as many messages, their
            # task.json are the same and git keeps it as it is, while the merge driver numbered one
            # clone's messages after the other's (README "A vault shared through git").
            last = self._last_number(self.log_key(task_id))
            if last > task.messages:
                task = task._replace(messages=last)
        return task

    def _last_number(self, key: str) -> int:
        """The number of the log's last readable message (0 without one)."""
        try:
            data, _ = self.store.read(key)
        except NotFound:
            return 0
        for line in reversed(data.split(b"\n")):
            try:
                number = json.loads(line)["n"] if line.strip() else None
            except (ValueError, KeyError, TypeError):
                continue  # a damaged or partial line: the one before it counts
            if isinstance(number, int) and not isinstance(number, bool):
                return number
        return 0

    def new(self, goal: str, plan: str | None = None) -> Task:
        goal = " ".join(goal.split())
        if not goal:
            raise UsageError("the task goal is empty")
        plan = _plan(plan)
        with self.lock():
            numbers = [int(name[1:]) for name in self._ids() if name[0] == "t" and name[1:].isdigit()]
            task_id = f"t{max(numbers, default=0) + 1}"
            task = Task(task_id, goal, utc_now(), "open", [], plan, messages=0)
            self.save(task)
        return task

    def _ids(self) -> list[str]:
        return self.store.folders(self.prefix)

    def ids(self) -> list[str]:
        """The user's task ids, oldest first."""
        return self._ids()

    def set_goal(self, task_id: str, goal: str) -> Task:
        with self.lock():
            task = self.get(task_id)._replace(goal=goal)
            self.save(task)
        return task

    def list_tasks(self) -> list[Task]:
        tasks = []
        for task_id in self._ids():
            try:
                tasks.append(self.get(task_id))
            except (NotFound, InvalidInput) as exc:
                self.warnings.append(exc.message)
        return sorted(tasks, key=lambda task: (task.created, task.id))

    def set_attached(self, task_id: str, change: Mapping[str, bool]) -> Task:
        """Attach (True) or detach (False) qualified document references; applies from the
        next message on, earlier messages keep the attachments they were added with."""
        with self.lock():
            task = self.get(task_id)
            attached = [ref for ref in task.attached if change.get(ref, True)]
            attached += [ref for ref, on in change.items() if on and ref not in attached]
            task = task._replace(attached=attached)
            self.save(task)
        return task

    def attached_in_use(self, task_id: str) -> tuple[list[str], int | None]:
        """The documents the task works with now, and the message that fixed them.

        A change of the selection applies from the next message: until then the attachments
        recorded with the latest message hold (the live selection when there is no message)."""
        task = self.get(task_id)
        if task.in_use is not None and task.messages:
            return list(task.in_use), task.messages
        try:
            data, _ = self.store.read(self._key(task_id, "messages.jsonl"))
        except NotFound:
            return list(task.attached), None
        for line in reversed(data.split(b"\n")):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                attached, number = raw["attached"], raw["n"]
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line is reported by messages(); the one before it counts
            if isinstance(attached, list) and all(isinstance(a, str) for a in attached):
                return list(attached), number if isinstance(number, int) else None
        return list(task.attached), None

    # --- messages -----------------------------------------------------------------------

    def messages(self, task_id: str) -> list[TaskMessage]:
        self.get(task_id)
        try:
            data, _ = self.store.read(self._key(task_id, "messages.jsonl"))
        except NotFound:
            return []
        messages = []
        for number, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                messages.append(parse_message(line))
            except (ValueError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
                self.warnings.append(f"{self._key(task_id, 'messages.jsonl')} line {number} skipped: {exc}")
        return messages

    def add_message(
        self, task_id: str, role: str, content: str, tool_calls: list[dict[str, Any]] | None = None
    ) -> TaskMessage:
        return self.add_messages(task_id, [NewMessage(role, content, tool_calls)])[0]

    def add_messages(self, task_id: str, new: Sequence[NewMessage]) -> list[TaskMessage]:
        """Append messages to the task's log in one write; one whose `source` (a transcript turn's
        id) the log holds already is not added again, so importing a transcript twice, or a
        replayed hook event, adds nothing. Returns the messages added."""
        for message in new:
            if message.role not in ROLES:
                raise InvalidInput(f"invalid role {message.role!r}: use {', '.join(ROLES)}")
        with self.lock():
            task = self.get(task_id)
            if task.status == "closed":
                raise Conflict(f"task {task_id} is closed")
            key = self._key(task_id, "messages.jsonl")
            # (a task from before the count: the log's lines, or its last number when a line went)
            count = task.messages
            if count is None:
                count = max(self._count_lines(key), self._last_number(key))
            importing = any(m.source for m in new)
            sources = {m.source for m in self.messages(task_id) if m.source} if importing else set()
            added: list[TaskMessage] = []
            for message in new:
                if message.source is not None and message.source in sources:
                    continue
                if message.source is not None:
                    sources.add(message.source)
                n = count + len(added) + 1
                added.append(
                    TaskMessage(
                        n, message.role, message.content, utc_now(), list(task.attached), message.tool_calls,
                        message.source,
                    )
                )  # fmt: skip
            if not added:
                return []
            lines = "".join(json.dumps(m.to_json(), ensure_ascii=False) + "\n" for m in added)
            # The count first: a crash between the two writes leaves a gap in the numbers, never
            # two messages with one number. The log is appended to, never rewritten.
            self.save(task._replace(messages=added[-1].n, in_use=added[-1].attached))
            self.store.append(key, lines.encode("utf-8"))
        return added

    def messages_from_end(self, task_id: str) -> Iterator[TaskMessage]:
        """The log's readable messages, the last first; damaged lines are skipped without a
        warning (messages() reports them). Nothing when there is no log."""
        try:
            data, _ = self.store.read(self.log_key(task_id))
        except NotFound:
            return
        for line in reversed(data.split(b"\n")):
            try:
                message = parse_message(line) if line.strip() else None
            except (ValueError, TypeError):
                message = None
            if message is not None:
                yield message

    def _count_lines(self, key: str) -> int:
        """Messages in a log from before tasks counted them (read once, then counted)."""
        try:
            data, _ = self.store.read(key)
        except NotFound:
            return 0
        return sum(1 for line in data.splitlines() if line.strip())

    # --- the task's own documents (compaction cache, consolidation watermark) ------------------

    def document(self, task_id: str, name: str) -> dict[str, Any] | None:
        """A JSON document of the task's folder, None when there is none or it cannot be read."""
        try:
            data = json.loads(self.store.read(self._key(task_id, name))[0])
        except (NotFound, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def keep_document(self, task_id: str, name: str, document: Mapping[str, Any]) -> None:
        """Write a JSON document of the task's folder atomically, under the task lock."""
        data = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
        with self.lock():
            self.store.write(self._key(task_id, name), data.encode("utf-8"))

    # --- work on a task that runs in one process at a time (consolidation) ----------------------

    def _run_name(self, task_id: str, work: str) -> str:
        return f"{work}-{self.user}-{validate_task_id(task_id)}"

    def work_lock(self, task_id: str, work: str, *, timeout: float) -> AbstractContextManager[None]:
        """The lock that lets one process at a time do `work` on the task (Busy after timeout)."""
        return self.store.lock(self._run_name(task_id, work), timeout=timeout)

    def work_lock_file(self, task_id: str, work: str) -> Path | None:
        """That lock's file, where the store keeps its locks in files (to ask who holds it)."""
        locks = getattr(self.store, "locks_dir", None)
        return Path(locks) / f"{self._run_name(task_id, work)}.lock" if isinstance(locks, Path) else None

    def _holder_key(self, task_id: str, work: str) -> str:
        return f".aibuddy/run/{self._run_name(task_id, work)}.pid"

    def record_lock_holder(self, task_id: str, work: str, identity: Mapping[str, Any]) -> None:
        """Record which process does the work now (a pid file under .aibuddy/run/)."""
        self.store.write(self._holder_key(task_id, work), json.dumps(identity).encode())

    def lock_holder(self, task_id: str, work: str) -> Any:
        """What the pid file holds, as JSON; NotFound without one, ValueError when it is not JSON."""
        return json.loads(self.store.read(self._holder_key(task_id, work))[0])

    def forget_lock_holder(self, task_id: str, work: str) -> None:
        self.store.delete(self._holder_key(task_id, work))

    def append_log(self, name: str, line: str) -> None:
        """One line appended to .aibuddy/logs/<name>.jsonl (ValueError: text that cannot be encoded)."""
        self.store.append(f".aibuddy/logs/{name}.jsonl", line.encode("utf-8"))

    def set_plan(self, task_id: str, plan: str | None, *, status: str | None = None) -> Task:
        """The task's plan in place of the one it had (None or only white space: no plan), and its
        status too when given (see set_status). A closed task's plan can still be changed."""
        plan = _plan(plan)
        if status is not None:
            _work_status(status, task_id)
        with self.lock():
            task = self.get(task_id)
            task = task._replace(plan=plan, status=status or task.status)
            self.save(task)
        return task

    def set_status(self, task_id: str, status: str) -> Task:
        """Where the task's work stands: open, blocked or done (each takes messages). Closed is
        `task end`'s, which also extracts memory: refused here. A closed task is reopened."""
        _work_status(status, task_id)
        with self.lock():
            task = self.get(task_id)._replace(status=status)
            self.save(task)
        return task

    def plan_warning(self, task: Task) -> None:
        """Say so when the task's plan holds both sides of a git conflict (the merge driver put
        them there, see tasks/merge.py): it stays so until a plan is set."""
        if task.plan is not None and has_conflict(task.plan):
            self.warnings.append(
                f"task {task.id}: the plan holds both sides of a git merge conflict; keep one with "
                f"`aibuddy task plan {task.id} TEXT`, then `git add` {self._key(task.id)}"
            )

    def mark_recalled(self, task_id: str, names: list[str], at_message: int) -> None:
        with self.lock():
            task = self.get(task_id)
            recalled = dict(task.recalled)
            for name in names:
                recalled.setdefault(name, at_message)
            self.save(task._replace(recalled=recalled))

    def end(self, task_id: str) -> Task:
        with self.lock():
            task = self.get(task_id)
            if task.status == "closed":
                raise Conflict(f"task {task_id} is already closed")
            task = task._replace(status="closed")
            self.save(task)
        return task
