"""The pass over a chunk and the run over a task's pending chunks; the add-message trigger."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import AibuddyError, Busy, InvalidInput
from ...memory.extraction import Decision, Extractor
from ..service import TaskMessage, TaskService
from .evidence import stated_part
from .handlers import Handlers, Tables, consolidation_tables, known_contacts, transient
from .log import log_pass
from .process import PassControl, spawn_pass
from .prompt import request
from .reply import Cited, Rejected, Reply
from .results import Cancelled, Consolidation, Pass, Status
from .shield import Shield
from .watermark import PASS_CATEGORIES, Watermark, chunk_digest, keep_watermark, watermark

if TYPE_CHECKING:
    from ...config import ConsolidationSettings
    from ...memory.service import MemoryService
    from ...models.calls import ModelCall, ModelSettings
    from ...settings import Settings
    from ...tables.service import TableService

CATEGORIES = (
    "memory", "contacts", "bios", "response_policies", "contact_summaries", "summaries", "knowledge", "tasks"
)  # fmt: skip
CONTACT_PARTS = ("bios", "response_policies", "contact_summaries")  # switched on only with contacts
ITEM_CATEGORIES = ("memory", "contacts", "knowledge", "tasks")  # in the order a pass applies them

Complete = Callable[["ModelSettings", list[dict[str, str]]], str]
"""The model call of a pass: the consolidate role's settings and the request in, the reply's text
out; ModelError for any failure (the pass fails and its chunk is tried again later)."""


def model_complete(settings: ModelSettings, messages: list[dict[str, str]]) -> str:
    """The configured model, through litellm (the model worker first, from the `aibuddy` command)."""
    from ...models.calls import complete_text

    return complete_text(settings, messages)


def categories(config: ConsolidationSettings, settings: Settings) -> dict[str, bool]:
    """The enabled categories: [consolidation] flags, then AIBUDDY_CONSOLIDATE_<CATEGORY>=0|1;
    bios and response policies only with contacts."""
    flags = {name: bool(getattr(config, name)) for name in CATEGORIES}
    flags.update(settings.consolidate)
    if not flags["contacts"]:
        flags.update(dict.fromkeys(CONTACT_PARTS, False))
    return flags


def only_categories(values: Iterable[str]) -> tuple[str, ...]:
    """The pass categories `--only` names (repeated, or comma-separated), in the order a pass
    takes them; InvalidInput for a name that is not one."""
    given = list(values) if isinstance(values, list | tuple) else None
    if given is None or not all(isinstance(value, str) for value in given):
        raise InvalidInput(f"the categories to consolidate are names: {', '.join(PASS_CATEGORIES)}")
    named = [part.strip() for value in given for part in value.split(",") if part.strip()]
    unknown = [name for name in named if name not in PASS_CATEGORIES]
    if unknown:
        raise InvalidInput(f"unknown consolidation category {unknown[0]!r}: use {', '.join(PASS_CATEGORIES)}")
    return tuple(category for category in PASS_CATEGORIES if category in named)


class _Run(NamedTuple):
    """What the passes of one run share."""

    task_id: str
    flags: dict[str, bool]
    call: ModelCall
    tables: Tables | None  # None: neither contacts nor knowledge is switched on
    dry_run: bool
    chosen: tuple[str, ...]  # the pass categories this run takes (switched on; all, or --only's)
    enabled: tuple[str, ...]  # the pass categories switched on (the shared watermark is theirs)


class Consolidator:
    def __init__(
        self,
        tasks: TaskService,
        memory: MemoryService,
        tables: Callable[[], TableService],
        settings: Settings,
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
        self.settings = settings
        self.config = tasks.vault.config.consolidation
        self.start = start or (lambda task_id: spawn_pass(tasks, settings, task_id))
        self.complete = complete
        self.control = PassControl(tasks)
        # The memory items of one pass are one reply: none merges into another unless the same fact.
        self._reconciler = Extractor(memory, settings)

    # --- status, the trigger, cancel ----------------------------------------------------------

    def running(self, task_id: str) -> bool:
        return self.control.running(task_id)

    def status(self, task_id: str) -> Status:
        mark = watermark(self.tasks, task_id)
        pending = self._pending(task_id, mark.last)
        return Status(mark.last, pending, self.running(task_id), mark.summary, mark.positions())

    def _pending(self, task_id: str, last: int) -> int:
        """How many of the task's messages come after message `last`."""
        task = self.tasks.get(task_id)
        count = task.messages if task.messages is not None else len(self.tasks.messages(task_id))
        return max(count - last, 0)

    def after_message(self, task_id: str, message: TaskMessage) -> bool:
        """Start a background pass when message completes a chunk; never raises. True if started."""
        try:
            # Unchecked against the log (read whole otherwise, on every message): a watermark a
            # git merge made stale is found by the pass this starts, or by the one after.
            if message.n - watermark(self.tasks, task_id, checked=False).last < self.config.every:
                return False
            if not any(categories(self.config, self.settings).values()) or not self._model().configured:
                return False
            self.start(task_id)
            return True
        except Exception:  # noqa: BLE001 - the message is added; consolidation is retried later
            return False

    def cancel(self, task_id: str) -> Cancelled:
        return self.control.cancel(task_id)

    # --- passes --------------------------------------------------------------------------------

    def _model(self) -> ModelCall:
        from ...models.calls import ModelCall

        return ModelCall("consolidate", self.tasks.vault.config.models, self.settings)

    def run(
        self,
        task_id: str,
        *,
        dry_run: bool = False,
        background: bool = False,
        only: Sequence[str] | None = None,
    ) -> Consolidation:
        """Consolidate the task's pending messages, chunk by chunk (in the background only whole
        chunks). Stops at the first chunk that fails; its watermark stays for the next try.

        only: the pass categories to run (`--only`; all the switched-on ones when None or empty).
        The others are neither asked of the model nor written, and keep their own watermark: the
        messages stay pending for them (see watermark.py)."""
        self.tasks.get(task_id)
        flags = categories(self.config, self.settings)
        enabled = tuple(category for category in PASS_CATEGORIES if flags[category])
        named = only_categories(only or ())
        chosen = tuple(category for category in named if flags[category]) if named else enabled
        call = self._model()
        reason = None
        if not call.configured:
            reason = "no model for the consolidate role (AIBUDDY_MODEL_CONSOLIDATE): nothing consolidated"
        elif not enabled:
            reason = "every consolidation category is switched off"
        elif named and not chosen:
            reason = f"--only {','.join(named)}: switched off; " + _switch_on(named)
        elif len(chosen) < len(named):
            off = [category for category in named if not flags[category]]
            self.tasks.warnings.append(f"--only: {', '.join(off)} left out, switched off; " + _switch_on(off))
        if reason is not None:
            return Consolidation(task_id, dry_run, reason, [], self.status(task_id))
        table_categories = {"contacts", "knowledge"} & set(chosen)
        tables = consolidation_tables(self._tables()) if table_categories else None
        run = _Run(task_id, flags, call, tables, dry_run, chosen, enabled)
        passes: list[Pass] = []
        try:
            while True:
                done = len(passes)
                if not self._passes(run, background, passes) or dry_run:
                    break
                # Messages may have completed a chunk while the lock was held; their trigger found
                # this pass busy and gave up. Looked at after the release, so none falls between.
                if len(passes) == done or not self._chunk_waiting(run, background):
                    break
                if any(p.chunk in [q.chunk for q in passes[:done]] for p in passes[done:]):
                    break  # a chunk again: the log no longer matches what was kept; never a loop
        except Busy:
            if not passes:
                reason = "a consolidation pass of this task is running"
        return Consolidation(task_id, dry_run, reason, passes, self.status(task_id))

    def _passes(self, run: _Run, background: bool, passes: list[Pass]) -> bool:
        """Under the task's lock, a pass over each pending chunk (in the background only whole
        ones), appended to passes; False when one failed (the rest waits for the next try).

        A chunk starts after the position of the run's categories that are furthest behind, and
        is asked of them only; it never runs past another of the run's categories' position (a
        chunk cut there counts as whole), so no category is given a message twice."""
        task_id, every = run.task_id, self.config.every
        with self.control.lock(task_id), self.control.recorded(task_id):
            mark = watermark(self.tasks, task_id)
            where = {category: mark.position(category) for category in run.chosen}
            messages = [m for m in self.tasks.messages(task_id) if m.n > min(where.values())]
            while True:
                after = min(where.values())
                pending = [m for m in messages if m.n > after][:every]
                if not pending:
                    break
                bound = min((at for at in where.values() if at > after), default=None)
                chunk = [m for m in pending if bound is None or m.n <= bound]
                asked = tuple(category for category in run.chosen if where[category] == after)
                if not chunk:  # no message left between the two positions (a gap in the numbers)
                    assert bound is not None
                    where.update(dict.fromkeys(asked, bound))
                    continue
                if background and len(chunk) == len(pending) < every:
                    break  # not a whole chunk yet
                done = self._pass(run, chunk, mark, asked)
                passes.append(done)
                if not done.applied and not run.dry_run:
                    return False
                where.update(dict.fromkeys(asked, chunk[-1].n))
                # The next chunk rolls the summary this one wrote (a dry run wrote none).
                mark = mark if run.dry_run else watermark(self.tasks, task_id)
        return True

    def _chunk_waiting(self, run: _Run, background: bool) -> bool:
        mark = watermark(self.tasks, run.task_id)
        pending = self._pending(run.task_id, min(mark.position(category) for category in run.chosen))
        return pending >= (self.config.every if background else 1)

    def _pass(self, run: _Run, chunk: list[TaskMessage], mark: Watermark, asked: tuple[str, ...]) -> Pass:
        first, last = chunk[0].n, chunk[-1].n
        digest = chunk_digest(chunk)
        if all(mark.chunk(category).digest == digest for category in asked):
            done = [Decision("chunk", "skipped", "already consolidated")]
            return Pass([first, last], done, True, list(asked))
        decisions: list[Decision] = []
        flags, previous = run.flags, mark.summary
        # What this pass asks for: its categories, and the parts of contacts switched on.
        ask = {category: category in asked for category in PASS_CATEGORIES}
        ask.update({part: ask["contacts"] and flags[part] for part in CONTACT_PARTS})
        tables = run.tables.queries.list_tables() if ask["knowledge"] and run.tables is not None else []
        known: dict[str, str] = {}
        if ask["contact_summaries"] and run.tables is not None:
            known = known_contacts(run.tables, [m.content for m in chunk])
        task = self.tasks.get(run.task_id) if ask["tasks"] else None
        messages = request(chunk, ask, previous, [info.ref.qualified for info in tables], known, task)
        reply = run.call(lambda settings: Reply.from_reply(self.complete(settings, messages)), warnings=None)
        if reply is None:
            decisions.append(Decision("model", "failed", str(run.call.failure)))
            if not run.dry_run:
                log_pass(self.tasks, run.task_id, [first, last], decisions, applied=False, categories=asked)
            return Pass([first, last], decisions, False, list(asked))
        decisions.append(Decision("model", "answered", reply.answered))
        shield = Shield(chunk)
        numbers = {m.n for m in chunk}
        texts = {m.n: m.content for m in chunk}
        self._reconciler.begin_reply()
        reconciler = self._reconciler
        handlers = Handlers(
            run.task_id, self.tasks, reconciler, run.tables, shield, ask, run.dry_run, known, task
        )
        category = "chunk"
        try:
            for category in ITEM_CATEGORIES:
                if not reply.gave(category):
                    continue
                if not ask[category]:
                    decisions.append(Decision(category, "ignored", self._left_out(run, category, mark)))
                    continue
                for value in reply.items(category):
                    decisions.extend(self._item(category, value, numbers, texts, handlers))
        except AibuddyError as error:  # the chunk is tried again (the shield makes what was written a no-op)
            if not transient(error):
                raise
            decisions.append(Decision(category, "failed", f"{error.message}: the chunk is tried again later"))
            if not run.dry_run:
                log_pass(self.tasks, run.task_id, [first, last], decisions, applied=False, categories=asked)
            return Pass([first, last], decisions, False, list(asked))
        summary = previous
        if reply.gave("summaries"):
            if not ask["summaries"]:
                decisions.append(Decision("summaries", "ignored", self._left_out(run, "summaries", mark)))
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
            keep_watermark(
                self.tasks, run.task_id, mark, chunk, digest, summary, asked=asked, enabled=run.enabled
            )
            log_pass(self.tasks, run.task_id, [first, last], decisions, applied=True, categories=asked)
        return Pass([first, last], decisions, not run.dry_run, list(asked))

    @staticmethod
    def _left_out(run: _Run, category: str, mark: Watermark) -> str:
        """Why a category the reply gave was not asked of this pass."""
        if not run.flags[category]:
            return "category switched off"
        if category not in run.chosen:
            return "not part of this pass (--only)"
        return f"already consolidated through message {mark.position(category)}"

    def _item(
        self, category: str, value: Any, numbers: set[int], texts: dict[int, str], handlers: Handlers
    ) -> list[Decision]:
        """What became of one item of the reply: why it was dropped, or the notes on parts left
        out and what its handler did."""
        try:
            item = Cited.from_reply(value, numbers)
            if handlers.shield.handles(category, item.fields):  # what is not written needs no check
                return [handlers.apply(category, item.fields)]
            fields, notes = stated_part(category, item, texts, handlers.known)
        except Rejected as exc:
            return [exc.decision(category)]
        return [*notes, handlers.apply(category, fields)]


def _switch_on(categories: Sequence[str]) -> str:
    """How to switch categories on, for one run or for good."""
    variables = " ".join(f"AIBUDDY_CONSOLIDATE_{category.upper()}=1" for category in categories)
    keys = ", ".join(f"{category} = true" for category in categories)
    return f"switch on with {variables} for one run, or {keys} under [consolidation] in aibuddy.toml"
