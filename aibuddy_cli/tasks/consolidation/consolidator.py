"""The pass over a chunk and the run over a task's pending chunks; the add-message trigger."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import Busy
from ...memory.extraction import Decision, Extractor
from ..service import TaskMessage, TaskService
from .evidence import stated_part
from .handlers import Handlers, Tables, consolidation_tables
from .log import log_pass
from .process import PassControl, spawn_pass
from .prompt import request
from .reply import Cited, Rejected, Reply
from .results import Cancelled, Consolidation, Pass, Status
from .shield import Shield
from .watermark import Watermark, chunk_digest, keep_watermark, watermark

if TYPE_CHECKING:
    from ...memory.service import MemoryService
    from ...models import ModelCall, ModelSettings
    from ...tables.service import TableService

CATEGORIES = ("memory", "contacts", "bios", "response_policies", "summaries", "knowledge", "tasks")
ITEM_CATEGORIES = ("memory", "contacts", "knowledge", "tasks")  # in the order a pass applies them

Complete = Callable[["ModelSettings", list[dict[str, str]]], str]
"""The model call of a pass: the consolidate role's settings and the request in, the reply's text
out; ModelError for any failure (the pass fails and its chunk is tried again later)."""


def model_complete(settings: ModelSettings, messages: list[dict[str, str]]) -> str:
    """The configured model, through litellm (the model worker first, from the `aibuddy` command)."""
    from ...models import complete_text

    return complete_text(settings, messages)


def categories(settings: Any, environ: Mapping[str, str]) -> dict[str, bool]:
    """The enabled categories: [consolidation] flags, then AIBUDDY_CONSOLIDATE_<CATEGORY>=0|1;
    bios and response policies only with contacts."""
    flags = {name: bool(getattr(settings, name)) for name in CATEGORIES}
    for name in CATEGORIES:
        value = environ.get(f"AIBUDDY_CONSOLIDATE_{name.upper()}")
        if value in ("0", "1"):
            flags[name] = value == "1"
    if not flags["contacts"]:
        flags["bios"] = flags["response_policies"] = False
    return flags


class _Run(NamedTuple):
    """What the passes of one run share."""

    task_id: str
    flags: dict[str, bool]
    call: ModelCall
    tables: Tables | None  # None: neither contacts nor knowledge is switched on
    dry_run: bool


class Consolidator:
    def __init__(
        self,
        tasks: TaskService,
        memory: MemoryService,
        tables: Callable[[], TableService],
        environ: Mapping[str, str],
        *,
        start: Callable[[str], None] | None = None,
        complete: Complete = model_complete,
    ) -> None:
        """tables: the table service, built when a pass needs it (not for the add-message check).
        start: how a background pass starts (default: a detached `aibuddy task consolidate`).
        complete: the model call (default: the configured model; a scripted one in tests)."""
        self.tasks = tasks
        self.memory = memory
        self._tables = tables
        self.environ = environ
        self.settings = tasks.vault.config.consolidation
        self.start = start or (lambda task_id: spawn_pass(tasks, environ, task_id))
        self.complete = complete
        self.control = PassControl(tasks)
        # The memory items of one pass are one reply: none merges into another unless the same fact.
        self._reconciler = Extractor(memory, environ)

    # --- status, the trigger, cancel ----------------------------------------------------------

    def running(self, task_id: str) -> bool:
        return self.control.running(task_id)

    def status(self, task_id: str) -> Status:
        mark = watermark(self.tasks, task_id)
        return Status(mark.last, self._pending(task_id, mark), self.running(task_id), mark.summary)

    def _pending(self, task_id: str, mark: Watermark) -> int:
        """How many of the task's messages come after the watermark mark."""
        task = self.tasks.get(task_id)
        count = task.messages if task.messages is not None else len(self.tasks.messages(task_id))
        return max(count - mark.last, 0)

    def after_message(self, task_id: str, message: TaskMessage) -> bool:
        """Start a background pass when message completes a chunk; never raises. True if started."""
        try:
            # Unchecked against the log (read whole otherwise, on every message): a watermark a
            # git merge made stale is found by the pass this starts, or by the one after.
            if message.n - watermark(self.tasks, task_id, checked=False).last < self.settings.every:
                return False
            if not any(categories(self.settings, self.environ).values()) or not self._model().configured:
                return False
            self.start(task_id)
            return True
        except Exception:  # noqa: BLE001 - the message is added; consolidation is retried later
            return False

    def cancel(self, task_id: str) -> Cancelled:
        return self.control.cancel(task_id)

    # --- passes --------------------------------------------------------------------------------

    def _model(self) -> ModelCall:
        from ...models import ModelCall

        return ModelCall("consolidate", self.tasks.vault.config.models, self.environ)

    def run(self, task_id: str, *, dry_run: bool = False, background: bool = False) -> Consolidation:
        """Consolidate the task's pending messages, chunk by chunk (in the background only whole
        chunks). Stops at the first chunk that fails; its watermark stays for the next try."""
        self.tasks.get(task_id)
        flags = categories(self.settings, self.environ)
        call = self._model()
        reason = None
        if not call.configured:
            reason = "no model for the consolidate role (AIBUDDY_MODEL_CONSOLIDATE): nothing consolidated"
        elif not any(flags.values()):
            reason = "every consolidation category is switched off"
        if reason is not None:
            return Consolidation(task_id, dry_run, reason, [], self.status(task_id))
        tables = consolidation_tables(self._tables()) if flags["contacts"] or flags["knowledge"] else None
        run = _Run(task_id, flags, call, tables, dry_run)
        passes: list[Pass] = []
        try:
            while True:
                through = watermark(self.tasks, task_id, checked=False).last
                if not self._passes(run, background, passes) or dry_run:
                    break
                # Messages may have completed a chunk while the lock was held; their trigger found
                # this pass busy and gave up. Looked at after the release, so none falls between.
                moved = watermark(self.tasks, task_id, checked=False).last != through
                if not moved or not self._chunk_waiting(task_id, background):
                    break
        except Busy:
            if not passes:
                reason = "a consolidation pass of this task is running"
        return Consolidation(task_id, dry_run, reason, passes, self.status(task_id))

    def _passes(self, run: _Run, background: bool, passes: list[Pass]) -> bool:
        """Under the task's lock, a pass over each pending chunk (in the background only whole
        ones), appended to passes; False when one failed (the rest waits for the next try)."""
        task_id = run.task_id
        with self.control.lock(task_id), self.control.recorded(task_id):
            mark = watermark(self.tasks, task_id)
            messages = [m for m in self.tasks.messages(task_id) if m.n > mark.last]
            every = self.settings.every
            while messages and (len(messages) >= every or not background):
                chunk, messages = messages[:every], messages[every:]
                done = self._pass(run, chunk, mark)
                passes.append(done)
                if not done.applied and not run.dry_run:
                    return False
                # The next chunk rolls the summary this one wrote (a dry run wrote none).
                mark = mark._replace(last=chunk[-1].n) if run.dry_run else watermark(self.tasks, task_id)
        return True

    def _chunk_waiting(self, task_id: str, background: bool) -> bool:
        pending = self._pending(task_id, watermark(self.tasks, task_id))
        return pending >= (self.settings.every if background else 1)

    def _pass(self, run: _Run, chunk: list[TaskMessage], mark: Watermark) -> Pass:
        first, last = chunk[0].n, chunk[-1].n
        digest = chunk_digest(chunk)
        if mark.digest == digest:
            return Pass([first, last], [Decision("chunk", "skipped", "already consolidated")], True)
        decisions: list[Decision] = []
        flags, previous = run.flags, mark.summary
        tables = run.tables.queries.list_tables() if flags["knowledge"] and run.tables is not None else []
        messages = request(chunk, flags, previous, [info.ref.qualified for info in tables])
        reply = run.call(lambda settings: Reply.from_reply(self.complete(settings, messages)), warnings=None)
        if reply is None:
            decisions.append(Decision("model", "failed", str(run.call.failure)))
            if not run.dry_run:
                log_pass(self.tasks, run.task_id, [first, last], decisions, applied=False)
            return Pass([first, last], decisions, False)
        decisions.append(Decision("model", "answered", reply.answered))
        shield = Shield(chunk)
        numbers = {m.n for m in chunk}
        texts = {m.n: m.content for m in chunk}
        self._reconciler.begin_reply()
        handlers = Handlers(run.task_id, self.tasks, self._reconciler, run.tables, shield, flags, run.dry_run)
        for category in ITEM_CATEGORIES:
            if not reply.gave(category):
                continue
            if not flags[category]:
                decisions.append(Decision(category, "ignored", "category switched off"))
                continue
            for value in reply.items(category):
                decisions.extend(self._item(category, value, numbers, texts, handlers))
        summary = previous
        if reply.gave("summaries"):
            if not flags["summaries"]:
                decisions.append(Decision("summaries", "ignored", "category switched off"))
            else:
                try:
                    rolled = handlers.summary(Cited.from_reply(reply.summary, numbers).fields, last)
                except Rejected as exc:
                    decisions.append(exc.decision("summaries"))
                else:
                    if rolled is not None:
                        summary, decision = rolled
                        decisions.append(decision)
        if not run.dry_run:
            # After the pass's writes, in one atomic write: a crash before it redoes this chunk
            # (the shield and reconcile make the redo a no-op), never skips it.
            keep_watermark(self.tasks, run.task_id, chunk, digest, summary)
            log_pass(self.tasks, run.task_id, [first, last], decisions, applied=True)
        return Pass([first, last], decisions, not run.dry_run)

    def _item(
        self, category: str, value: Any, numbers: set[int], texts: dict[int, str], handlers: Handlers
    ) -> list[Decision]:
        """What became of one item of the reply: why it was dropped, or the notes on parts left
        out and what its handler did."""
        try:
            item = Cited.from_reply(value, numbers)
            if handlers.shield.handles(category, item.fields):  # what is not written needs no check
                return [handlers.apply(category, item.fields)]
            fields, notes = stated_part(category, item, texts)
        except Rejected as exc:
            return [exc.decision(category)]
        return [*notes, handlers.apply(category, fields)]
