"""What a natural-language table run keeps and shows beyond its changes: its conversation (so that
`table update --continue RUN` goes on in it), the steps it reports as they happen, and how Ctrl-C
stops it between operations.

- The conversation is kept through the store at `.aibuddy/undo/<run>/conversation.json`, beside
  the run's undo record, with the user, the kind of run, the run it continues, whether `ask` ran
  and whether it was a dry run. It is redacted (an automatic write: no credential-shaped value,
  as in the rows the run wrote and its journal lines) and bounded: it keeps the tool results the
  run's reading budget holds, newest first, and leaves the others out; then texts longer than
  SHORTENED_TO characters are shortened, oldest first, until it is at most CONVERSATION_CHARS
  characters, and if many short tool calls still make it longer, their arguments are left out,
  oldest first. A turn whose
  tool calls did not all run (Ctrl-C) gets an error result for each, so the conversation stays
  one a model API takes.
- Progress: each model turn and each tool call is an event (a JSON-able dict, see `RunEvent`)
  handed to the front end's `progress` hook as it happens.
- Ctrl-C: `Interrupts` makes SIGINT stop the run at once while the model thinks or a read runs,
  and only after the operation being applied is applied and journaled (a second Ctrl-C does not
  wait). It takes over SIGINT only in the main thread and only where SIGINT has Python's default
  handler (never in an MCP server's threads, never where SIGINT is ignored).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypedDict

from ..errors import NotFound
from ..models.agent import LoopEvent
from ..store.files import Store
from .undo import UNDO_FOLDER, check_run_id

CONVERSATION_CHARS = 600_000  # the most a run's kept conversation holds
SHORTENED_TO = 2_000  # a text of the kept conversation that is shortened keeps this much
INTERRUPTED_RESULT = '{"error": "not run: the user stopped the run (Ctrl-C) before this call"}'
PREVIEW = 160  # characters of a tool call's arguments a progress line shows


def conversation_key(run: str) -> str:
    return f"{UNDO_FOLDER}/{run}/conversation.json"


class Conversation(NamedTuple):
    """A run's conversation as it is kept."""

    run: str
    user: str
    kind: str  # "update" or "refactor"
    continues: str | None  # the run this one went on from
    asked: bool  # whether the run's required first `ask` happened
    dry_run: bool
    messages: list[dict[str, Any]]

    def save(self, store: Store, budget_chars: int) -> None:
        from ..redaction.detect import redacted  # an automatic write: no credential-shaped value kept

        document = self._replace(messages=bounded(settled(redacted(self.messages)), budget_chars))._asdict()
        # "replace": a lone surrogate a model's JSON escape (\ud800) made is no UTF-8: a "?" instead
        text = json.dumps(document, ensure_ascii=False).encode("utf-8", "replace")
        store.write(conversation_key(self.run), text)

    @classmethod
    def load(cls, store: Store, run: str, user: str) -> Conversation:
        """The kept conversation of the user's run; NotFound for any other (another user's too)."""
        missing = NotFound(
            f"no run {run} of yours to continue (runs keep their conversation in "
            f"{UNDO_FOLDER}/<run>/ from their first step)"
        )
        try:
            document = json.loads(store.read(conversation_key(check_run_id(run)))[0])
            kept = cls(**{field: document[field] for field in cls._fields})
        except (NotFound, ValueError, KeyError, TypeError):
            raise missing from None
        if kept.user != user or not isinstance(kept.messages, list):
            raise missing
        return kept


def settled(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """messages where every tool call has its result: one that never ran gets an error."""
    result: list[dict[str, Any]] = []
    waiting: list[str] = []
    for message in [*messages, None]:
        if message is None or message.get("role") != "tool":
            result += [{"role": "tool", "tool_call_id": i, "content": INTERRUPTED_RESULT} for i in waiting]
            waiting = []
        if message is None:
            break
        if message.get("role") == "tool" and message.get("tool_call_id") in waiting:
            waiting.remove(message["tool_call_id"])
        result.append(message)
        if message.get("role") == "assistant":
            waiting = [call.get("id") for call in message.get("tool_calls") or []]
    return result


def _shortened_call(call: dict[str, Any], longer_than: int = SHORTENED_TO) -> dict[str, Any]:
    """A tool call of the kept conversation, its arguments left out when longer than that."""
    arguments = call.get("function", {}).get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    if len(text) <= max(longer_than, len(json.dumps({"left_out": len(text)}))):
        return call
    return {**call, "function": {**call["function"], "arguments": json.dumps({"left_out": len(text)})}}


def _size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False))


def _left_out(what: str, chars: int) -> str:
    return f"[{what} of {chars:,} characters left out of the run's kept conversation]"


def bounded(messages: list[dict[str, Any]], budget_chars: int) -> list[dict[str, Any]]:
    """messages within the bounds of a kept conversation (see the module's docstring)."""
    kept = [dict(message) for message in messages]
    read = 0
    for message in reversed(kept):  # the tool results the reading budget holds, newest first
        if message.get("role") != "tool":
            continue
        content = str(message.get("content") or "")
        if read + len(content) <= budget_chars:
            read += len(content)
        else:
            message["content"] = json.dumps({"error": _left_out("this result", len(content))})
    total = sum(_size(message) for message in kept)
    # Then the longest texts, oldest first (the system prompt stays); then, if many short calls
    # still make it too long, every call's arguments, oldest first.
    for longest in (SHORTENED_TO, 0):
        for message in kept[1:]:
            if total <= CONVERSATION_CHARS:
                return kept
            before = _size(message)
            text = message.get("content")
            if isinstance(text, str) and len(text) > SHORTENED_TO:
                if message.get("role") == "tool":
                    message["content"] = json.dumps({"error": _left_out("this result", len(text))})
                else:
                    message["content"] = text[:SHORTENED_TO] + "\n" + _left_out("the rest", len(text))
            calls = message.get("tool_calls") or []
            if calls:
                message["tool_calls"] = [_shortened_call(call, longest) for call in calls]
            total -= before - _size(message)
    return kept


# --- what a run shows as it goes ------------------------------------------------------------


class RunEvent(TypedDict, total=False):
    """One line of a run's progress (`--json`: a JSON line on stderr). Every event has `event`
    and `loop`; the others by event:

    - "run": `run` (its id; None for `table ask`), `continues`, `max_steps`, `document`
    - "step": `depth` (0; 1 inside the `ask` tool), `step`, `calls` (the tools the model calls;
      none: it answers)
    - "tool": `depth`, `step`, `tool`, `arguments` (redacted and cut to size), `ok`, `error`
      (None when ok), `applied` (a change: applied or not (dry run, refused); None for a read)
    - "interrupted": `run`, `applied` (how many operations the run applied)
    """

    event: str
    loop: str
    run: str | None
    continues: str | None
    max_steps: int
    document: dict[str, Any] | None
    depth: int
    step: int
    calls: list[str]
    tool: str
    arguments: Any
    ok: bool
    error: str | None
    applied: Any


Progress = Callable[[RunEvent], None]


def tool_arguments(arguments: Any) -> Any:
    """A tool call's arguments as a progress event shows them: parsed, redacted, cut to size."""
    from ..jsonvalues import loads
    from .state import asked

    if isinstance(arguments, str):
        try:
            arguments = loads(arguments)  # strict: a NaN is shown as the model wrote it
        except ValueError:
            return asked(arguments)
    return asked(arguments)


def loop_event(event: LoopEvent, loop: str, depth: int, changes: frozenset[str]) -> RunEvent:
    """An agent loop's event as a run's progress event."""
    if event.tool is None:
        return {"event": "step", "loop": loop, "depth": depth, "step": event.step, "calls": list(event.calls)}
    try:
        result = json.loads(event.result or "null")
    except ValueError:
        result = None
    error = result.get("error") if isinstance(result, dict) else None
    applied: bool | None = None
    if event.tool in changes:
        applied = error is None and not (isinstance(result, dict) and result.get("dry_run"))
    return {
        "event": "tool",
        "loop": loop,
        "depth": depth,
        "step": event.step,
        "tool": event.tool,
        "arguments": tool_arguments(event.arguments),
        "ok": error is None,
        "error": None if error is None else str(error),
        "applied": applied,
    }


# --- Ctrl-C ------------------------------------------------------------------------------------


class Interrupts:
    """SIGINT during a run (see the module's docstring)."""

    def __init__(self) -> None:
        self.requested = False
        self.applying = 0
        # An operation was applied and its result is not in the conversation yet (until the loop's
        # next event): Ctrl-C waits for that too, so the conversation never says "not run" of it.
        self.settling = False

    @contextmanager
    def installed(self) -> Iterator[Interrupts]:
        ours = (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        )
        if not ours:
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._interrupted)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    def _interrupted(self, number: int, frame: Any) -> None:
        if (self.applying or self.settling) and not self.requested:
            self.requested = True  # stop once the operation being applied is applied
            return
        raise KeyboardInterrupt

    @contextmanager
    def applying_one(self) -> Iterator[None]:
        """An operation being applied: Ctrl-C waits for its end (and for its result to be told)."""
        self.applying += 1
        try:
            yield
            self.settling = True
        finally:
            self.applying -= 1

    def check(self) -> None:
        """Stop here if Ctrl-C came while an operation was applied (the loop told its result)."""
        self.settling = False
        if self.requested and not self.applying:
            raise KeyboardInterrupt
