"""The working set for a task's next model call: goal, plan, compacted history, recent messages,
recalled memories and the map of the task's documents.

Compaction never touches the message log: when the history's estimated size passes
`[context] compact_at_tokens`, the older messages are shown as one summary (the `compact` model
role, else a deterministic digest) with the message numbers it covers. The summary is cached in
the task folder and rebuilt only when the messages it covers change.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_left
from typing import NamedTuple, TypedDict

from ..errors import describe_failure
from ..jsonvalues import to_json
from ..knowledge.documents import split_citation
from ..knowledge.retrieval import MapEntryJson, UnavailableJson
from ..knowledge.service import KnowledgeService, MapEntry
from ..memory.records import MemoryRecord, RecordJson
from ..memory.service import MemoryService
from ..text import shorten
from ..transcripts import aibuddy_tool
from .service import Task, TaskMessage, TaskMessageJson, TaskService

COMPACT_PROMPT = (
    "Summarise this conversation history for the assistant that continues the task: decisions, "
    "facts established, open questions, and the state of the work. Keep names, numbers and file "
    "paths exact. Plain text, at most 250 words."
)


def estimate_tokens(text: str) -> int:
    """A provider-neutral estimate: about four characters a token, plus per-message overhead."""
    return len(text) // 4 + 4


def digest_line(message: TaskMessage, call: ToolCall | None = None, found: Pointers | None = None) -> str:
    """One line standing for a message in the deterministic digest (call: the one a tool result
    answers). A tool result keeps its pointers: the section its call read, the `doc#anchor`
    citations it carried, or the memory records it returned."""
    if message.role == "tool":
        status = "error" if _looks_failed(message.content) else "ok"
        tool = call.name if call else None
        label = f"tool result ({tool})" if tool else "tool result"
        line = f"#{message.n} {label}: {status} ({len(message.content)} chars)"
        if found is None:
            found = message_pointers(message, call)
        if found.citations:
            shown = ", ".join(found.citations[:MAX_POINTERS])
            more = len(found.citations) - MAX_POINTERS
            line += f"; cites {shown}" + (f" and {more} more" if more > 0 else "")
        if found.memories is not None:
            names = ", ".join(found.memories[:MAX_POINTERS])
            line += f"; {len(found.memories)} memory record(s)" + (f": {names}" if names else "")
        return line
    first = next((line.strip() for line in message.content.splitlines() if line.strip()), "")
    first = shorten(first, 160)
    return f"#{message.n} {message.role}: {first}"


MAX_POINTERS = 12  # on one tool result's digest line
MAX_LISTED = 20  # of each kind in the list of the compacted messages' pointers (the latest)
POINTER_CHARS = 100  # one pointer in that list, at most
READING_TOOLS = frozenset({"read_section", "read_doc"})  # a call of these names what it reads
_CITATION = re.compile(r"\[([^\[\]\s#]+#[^\]\s]+)\]")  # [doc#anchor], ids in any script


class Pointers(NamedTuple):
    citations: list[str]  # doc#anchor, in order of appearance, once each
    memories: list[str] | None  # record names of a memory result, None when it is not one

    @property
    def found(self) -> bool:
        return bool(self.citations) or self.memories is not None


class ToolCall(NamedTuple):
    """A call of an assistant turn, as the digest reads it."""

    name: str | None
    arguments: object  # parsed JSON where the call gave text, else what it gave

    @property
    def pointer(self) -> str | None:
        """The section (doc#anchor) a read_section call reads, or the document a read_doc call
        outlines, from the call's own arguments: a pointer whatever shape its result has (plain
        text, an error, a page cut short)."""
        tool = aibuddy_tool(self.name) if self.name else None
        arguments = self.arguments
        if tool not in READING_TOOLS or not isinstance(arguments, dict):
            return None
        doc, anchor = arguments.get("doc"), arguments.get("anchor")
        if not isinstance(doc, str) or not doc.strip():
            return None
        if tool == "read_doc":
            return doc
        if isinstance(anchor, str) and anchor:
            return f"{doc}#{anchor}"
        return doc if split_citation(doc) else None  # read_section's DOC#ANCHOR form


def pointers(content: str) -> Pointers:
    """What a tool result points at: read_section, read_doc, search_docs and kb ask results carry
    documents and sections; a memory_recall result carries record names."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):  # text, or JSON nested past the interpreter's limit
        return Pointers(list(dict.fromkeys(_CITATION.findall(content))), None)
    citations: list[str] = []
    memories: list[str] | None = None
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            doc, anchor = item.get("doc"), item.get("anchor")
            if isinstance(doc, str) and isinstance(anchor, str):
                citations.append(f"{doc}#{anchor}")
            elif isinstance(doc, str) and "outline" in item:
                citations.append(doc)  # read_doc: the whole document's outline
            records = item.get("records")
            if (
                memories is None
                and isinstance(records, list)
                and all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in records)
            ):
                memories = [r["name"] for r in records]
            answer = item.get("answer")
            if isinstance(answer, str):
                citations += _CITATION.findall(answer)
            stack.extend(reversed([v for k, v in item.items() if k not in ("records", "outline")]))
    return Pointers(list(dict.fromkeys(citations)), memories)


def message_pointers(message: TaskMessage, call: ToolCall | None) -> Pointers:
    """What a message points at: a tool result, what its content carries and the section its
    call read; any other message, nothing."""
    if message.role != "tool":
        return Pointers([], None)
    found = pointers(message.content)
    read = call.pointer if call else None
    if read is None or read in found.citations:
        return found
    return found._replace(citations=[read, *found.citations])


def result_calls(messages: list[TaskMessage]) -> dict[int, ToolCall]:
    """Message number → the call whose result it is: the calls of the assistant turn before, in
    their order. Assistant turns with no result between them are one turn: Claude Code writes
    each block of a reply (its text, each tool call) as an entry of its own."""
    answered: dict[int, ToolCall] = {}
    calls: list[ToolCall] = []
    position = 0
    previous: str | None = None
    for message in messages:
        if message.role == "assistant" and previous == "assistant":
            calls = [*calls, *_calls(message)]
        elif message.role == "assistant":
            calls, position = _calls(message), 0
        elif message.role == "tool":
            if position < len(calls):
                answered[message.n] = calls[position]
            position += 1
        else:
            calls, position = [], 0
        previous = message.role
    return answered


def _calls(message: TaskMessage) -> list[ToolCall]:
    calls = []
    for call in message.tool_calls or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue  # (no call: message.tool_names passes it over too)
        name, arguments = function.get("name"), function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                pass  # text that is no JSON: no pointer in it
        calls.append(ToolCall(name if isinstance(name, str) and name else None, arguments))
    return calls


class PointersSeen(NamedTuple):
    """The pointers of a run of messages, each with the indices of the messages that had it."""

    citations: dict[str, list[int]]
    memories: dict[str, list[int]]

    @classmethod
    def of(cls, found: list[Pointers]) -> PointersSeen:
        seen = cls({}, {})
        for index, pointed in enumerate(found):
            for citation in pointed.citations:
                seen.citations.setdefault(citation, []).append(index)
            for name in pointed.memories or ():
                seen.memories.setdefault(name, []).append(index)
        return seen

    def listed(self, before: int | None = None) -> str:
        """Those of the messages before index `before` (all: None) on one line, bounded: of each
        kind the MAX_LISTED the latest of these messages had, each cut to POINTER_CHARS; "" when
        there are none."""
        parts = []
        for label, kind in (("sections read or cited", self.citations), ("memory records", self.memories)):
            last = {
                item: indices[-1] if before is None else indices[bisect_left(indices, before) - 1]
                for item, indices in kind.items()
                if before is None or indices[0] < before
            }
            items = sorted(last, key=last.__getitem__)  # the latest last; ties in order of appearance
            if items:
                shown = ", ".join(shorten(item, POINTER_CHARS) for item in items[-MAX_LISTED:])
                more = len(items) - MAX_LISTED
                parts.append(f"{label}: " + (f"{more} earlier, then " if more > 0 else "") + shown)
        return "; ".join(parts)


def _looks_failed(content: str) -> bool:
    head = content.lstrip()[:200].lower()
    if head.startswith(("error", "traceback", "exception", "failed")):
        return True
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and bool(data.get("error"))


class HistorySummary(NamedTuple):
    """The older messages, compacted: a model's summary or a deterministic digest."""

    text: str
    method: str  # "model" or "digest"
    covers: list[int]  # [first, last] message numbers


class DeliveredJson(TypedDict):
    name: str
    since_message: int


class AlreadyInContextJson(TypedDict):
    count: int
    records: list[DeliveredJson]


class ContextMemoriesJson(TypedDict):
    method: str  # "model", "lexical", or "none"
    records: list[RecordJson]
    already_in_context: AlreadyInContextJson


class ContextMemories(NamedTuple):
    method: str  # the recall's: "model", "lexical", or "none" when recall failed
    records: list[MemoryRecord]  # delivered now, with their bodies
    already_in_context: dict[str, int]  # record name -> the message count it was delivered at

    def to_json(self) -> ContextMemoriesJson:
        seen: list[DeliveredJson] = [
            {"name": name, "since_message": since} for name, since in self.already_in_context.items()
        ]
        return {
            "method": self.method,
            "records": [r.to_json() for r in self.records],
            "already_in_context": {"count": len(seen), "records": seen},
        }


class ConsolidatedJson(TypedDict):
    through: int  # the last message consolidated
    summary: str | None  # the rolling summary


class TaskContextJson(TypedDict):
    task: str
    goal: str
    plan: str | None
    status: str
    summary: HistorySummary | None
    messages: list[TaskMessageJson]
    memories: ContextMemoriesJson
    documents: list[MapEntryJson]
    unavailable_documents: list[UnavailableJson]
    estimated_tokens: int
    consolidation: ConsolidatedJson


class TaskContext(NamedTuple):
    """The working set for a task's next model call."""

    task: Task
    summary: HistorySummary | None
    messages: list[TaskMessage]  # the recent ones, verbatim
    memories: ContextMemories
    documents: list[MapEntry]
    unavailable_documents: list[UnavailableJson]
    consolidated: tuple[int, str | None] = (0, None)  # the last message consolidated, the rolling summary

    @property
    def estimated_tokens(self) -> int:
        recent = sum(estimate_tokens(m.content) for m in self.messages)
        return recent + (estimate_tokens(self.summary.text) if self.summary else 0)

    def to_json(self) -> TaskContextJson:
        return {
            "task": self.task.id,
            "goal": self.task.goal,
            "plan": self.task.plan,
            "status": self.task.status,
            "summary": to_json(self.summary) if self.summary else None,
            "messages": [m.to_json() for m in self.messages],
            "memories": self.memories.to_json(),
            "documents": [entry.to_json() for entry in self.documents],
            "unavailable_documents": self.unavailable_documents,
            "estimated_tokens": self.estimated_tokens,
            "consolidation": {"through": self.consolidated[0], "summary": self.consolidated[1]},
        }


class ContextAssembler:
    """Assembles a task's context from one user's services, which share one warnings sink (a
    Session builds them so): what the assembly leaves out or falls back from goes there too."""

    def __init__(self, tasks: TaskService, memory: MemoryService, knowledge: KnowledgeService) -> None:
        if knowledge.warnings is not tasks.warnings:
            raise ValueError("the services of a context share one warnings sink: use Session.context")
        self.vault = tasks.vault
        self.tasks = tasks
        self.memory = memory
        self.knowledge = knowledge
        self.settings = memory.settings
        self.warnings = tasks.warnings

    def assemble(self, task_id: str, query: str | None = None) -> TaskContext:
        task = self.tasks.get(task_id)
        self.tasks.plan_warning(task)
        messages = self.tasks.messages(task_id)
        older, recent = self._split(messages)
        summary = self._summary(task_id, older) if older else None
        memories = self._memories(
            task_id, task.recalled, query or self._default_query(task.goal, messages), len(messages)
        )
        try:
            documents, unavailable = self.knowledge.map(task_id)
        except Exception as exc:  # noqa: BLE001 - a side path: the context assembles without it
            self.warnings.append(f"document map left out: {describe_failure(exc)}")
            documents, unavailable = [], []
        from .consolidation import consolidated

        return TaskContext(
            task, summary, recent, memories, documents, unavailable, consolidated(self.tasks, task_id)
        )

    def _split(self, messages: list[TaskMessage]) -> tuple[list[TaskMessage], list[TaskMessage]]:
        """(older messages to compact, recent ones kept verbatim)."""
        settings = self.vault.config.context
        if sum(estimate_tokens(m.content) for m in messages) <= settings.compact_at_tokens:
            return [], messages
        keep = min(settings.recent_messages, len(messages))
        budget = settings.compact_at_tokens // 2
        used = sum(estimate_tokens(m.content) for m in messages[len(messages) - keep :])
        while keep < len(messages) and used + estimate_tokens(messages[-keep - 1].content) <= budget:
            keep += 1
            used += estimate_tokens(messages[-keep].content)
        return messages[: len(messages) - keep], messages[len(messages) - keep :]

    def _summary(self, task_id: str, older: list[TaskMessage]) -> HistorySummary:
        from ..models.calls import ModelCall

        if not ModelCall("compact", self.vault.config.models, self.settings).configured:
            # No model, no cache: the digest is cheap to make, so the older messages are not hashed.
            return HistorySummary(self._digest(older), "digest", [older[0].n, older[-1].n])
        covered = hashlib.sha256(
            json.dumps([m.to_json() for m in older], ensure_ascii=False).encode()
        ).hexdigest()
        cached = self.tasks.document(task_id, "summary.json")
        if cached is not None and cached.get("sha256") == covered:
            try:
                return HistorySummary(**{k: cached[k] for k in HistorySummary._fields})
            except KeyError:
                pass  # an older or damaged cache: made again
        covers = [older[0].n, older[-1].n]
        text, method = self._compact(older)
        summary = HistorySummary(text, method, covers)
        if method == "model":  # a digest is cheap to rebuild; only model summaries are worth keeping
            self.tasks.keep_document(task_id, "summary.json", {**to_json(summary), "sha256": covered})
        return summary

    def _compact(self, older: list[TaskMessage]) -> tuple[str, str]:
        from ..models.calls import ModelSettings, call_role, complete_text

        def summarize(role: ModelSettings) -> str:
            history = "\n\n".join(f"#{m.n} {m.role}: {m.content[:4000]}" for m in older)
            return complete_text(
                role, [{"role": "system", "content": COMPACT_PROMPT}, {"role": "user", "content": history}]
            )

        fallback = "used a deterministic digest of the older messages"
        models, warnings = self.vault.config.models, self.warnings
        text = call_role("compact", models, self.settings, summarize, warnings=warnings, fallback=fallback)
        if text is not None:
            from ..redaction.detect import screen

            # Screened, then cut: a key cut first could be too short to be seen as one.
            what = "the compact model's summary"
            text = screen(text.strip(), automatic=True, warnings=warnings, what=what)
            return self._bounded(text) + self._pointer_appendix(older), "model"
        return self._digest(older), "digest"

    def _bounded(self, summary: str) -> str:
        """A model summary within the digest's budget (half the compaction threshold): a reply
        of any size never reaches the context or the cached summary in the vault whole."""
        limit = self.vault.config.context.compact_at_tokens // 2 * 4
        if len(summary) <= limit:
            return summary
        self.warnings.append(f"the compact model's summary was cut to its budget ({limit} characters)")
        return shorten(summary, limit)

    @staticmethod
    def _pointer_appendix(older: list[TaskMessage]) -> str:
        """The compacted messages' pointers, kept verbatim under a model's summary."""
        calls = result_calls(older)
        listed = PointersSeen.of([message_pointers(m, calls.get(m.n)) for m in older]).listed()
        return f"\n\nPointers in the compacted messages: {listed}" if listed else ""

    def _digest(self, older: list[TaskMessage]) -> str:
        """One line per message, newest kept first, within half the compaction threshold. The
        messages left out are named by their numbers, with their pointers: those survive any cut
        (bounded: PointersSeen.listed)."""
        budget = self.vault.config.context.compact_at_tokens // 2
        calls = result_calls(older)
        found = [message_pointers(m, calls.get(m.n)) for m in older]
        seen = PointersSeen.of(found)

        def left_out(count: int) -> str:  # the first `count` messages, not shown
            listed = seen.listed(before=count)
            kept = f"; their pointers: {listed}" if listed else ""
            return f"(messages {older[0].n}-{older[count - 1].n}: {count} more, not shown{kept})"

        lines: list[str] = []
        for index in range(len(older) - 1, -1, -1):
            line = digest_line(older[index], calls.get(older[index].n), found[index])
            shown = [left_out(index), line, *lines] if index else [line, *lines]
            if lines and estimate_tokens("\n".join(shown)) > budget:
                lines.insert(0, left_out(index + 1))  # what the step before measured
                break
            lines.insert(0, line)
        return "\n".join(lines)

    @staticmethod
    def _default_query(goal: str, messages: list[TaskMessage]) -> str:
        last_user = next((m.content for m in reversed(messages) if m.role == "user"), "")
        return f"{goal}\n{last_user[:2000]}"

    def _memories(self, task_id: str, recalled: dict[str, int], query: str, count: int) -> ContextMemories:
        """At most five recalled records; those an earlier message already received appear only
        by name and status, so the context does not repeat their bodies."""
        try:
            result = self.memory.recall(query)
        except Exception as exc:  # noqa: BLE001 - recall is a side path: never a failed context
            self.warnings.append(f"memories left out: recall failed ({describe_failure(exc)})")
            return ContextMemories("none", [], {})
        fresh = [r for r in result.records if r.name not in recalled]
        seen = [r for r in result.records if r.name in recalled]
        if fresh:
            try:
                self.tasks.mark_recalled(task_id, [r.name for r in fresh], count)
            except Exception as exc:  # noqa: BLE001 - the next context may repeat these bodies
                reason = describe_failure(exc)
                self.warnings.append(f"could not note the delivered memories in the task: {reason}")
        return ContextMemories(result.method, fresh, {r.name: recalled[r.name] for r in seen})
