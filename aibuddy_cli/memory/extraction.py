"""Automatic memory extraction from a conversation: gated, reconciled, never over a person's words.

Pipeline: the latest three user/assistant pairs → skip if the assistant just wrote memory
explicitly → a deterministic cue gate (no cue, no model call) → the `extract` model proposes
candidates → each is validated and reconciled against the user's records: low salience, not
durable or recoverable elsewhere is dropped; equivalent content is a no-op; a same-type record
with a similar description is updated if extraction wrote it, and left alone if a person did;
anything else becomes a new record with provenance `auto`. Every decision is logged.

"Similar" is facts.compare: the words that carry the fact must agree, so "allergic to peanuts"
and "allergic to shellfish" are two records. Within one reply (one `run`, or one consolidation
pass through `begin_reply`), a candidate is merged into a record an earlier candidate of the
same reply wrote only when it is the same fact without the replacement rule: a reply that states
two values states two facts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, NotRequired, TypedDict

from ..clock import utc_now
from ..errors import AibuddyError, InvalidInput, ModelError
from ..jsonvalues import to_json
from ..names import validate_record_name
from ..settings import Settings
from ..text import shorten
from ..transcripts import aibuddy_tool, read_transcript
from .cues import find_cues as cue_kinds
from .facts import Comparison, compare
from .pending import Action, Pending
from .records import TYPES, MemoryRecord, validate_body, validate_description
from .service import MemoryService

EXTRACTION_LOG = ".aibuddy/logs/extraction.jsonl"
MEMORY_WRITE_TOOLS = frozenset({"memory_save", "memory_update", "memory_delete"})
PAIRS = 3
MAX_CANDIDATES = 50  # candidates of one reply that are weighed at all
MAX_LOGGED_DROPS = 20  # candidates left over that are logged by name; the rest as a count

EXTRACT_PROMPT = """You decide what, if anything, from the latest turns of a conversation is worth
keeping in the user's long-term memory. Keep only stable preferences, facts about who the user is,
feedback on how the assistant should behave, and durable project background that no file or
system holds. Never keep task-specific details, secrets, or anything recoverable from files or
connected systems. Write in the conversation's own language.

Reply with JSON only:
{"candidates": [{"type": "user|feedback|project|reference", "name": "lowercase-file-stem",
  "description": "one line", "body": "markdown", "salience": 0.0-1.0, "durable": true|false,
  "recoverable": true|false}]}
Reply {"candidates": []} when nothing qualifies."""

# The outcomes that count as one of a reply's writes: made, proposed for a person, or a dry run's.
WRITES = ("created", "updated", "proposed", "would-create", "would-update")


class Message(NamedTuple):
    role: str
    content: str
    tool_names: tuple[str, ...] = ()


class DecisionJson(TypedDict):
    step: str
    outcome: str
    detail: str
    name: NotRequired[str]  # left out when the decision names no record


class Decision(NamedTuple):
    step: str  # window | cue | model | candidate | write
    outcome: str  # e.g. no-cue, skipped, dropped, no-op, created, updated, protected, failed
    detail: str
    name: str | None = None

    def to_json(self) -> DecisionJson:
        data: DecisionJson = {"step": self.step, "outcome": self.outcome, "detail": self.detail}
        if self.name is not None:
            data["name"] = self.name
        return data


class ExtractionResult(NamedTuple):
    cues: list[str]
    dry_run: bool
    written: list[str]  # record names created or updated
    decisions: list[Decision]


class Candidate(NamedTuple):
    """One record the extract model proposes, checked field by field (`from_reply`). Its
    provenance, if the model gives one, is never read: what extraction writes is `auto`."""

    name: str
    type: str
    description: str
    body: str
    salience: float
    durable: bool
    recoverable: bool

    @classmethod
    def from_reply(cls, raw: Any) -> Candidate:
        """The candidate in raw (one item of the reply's list); InvalidInput saying what is wrong."""
        if not isinstance(raw, dict):
            raise InvalidInput("a candidate that is not an object")
        name = raw.get("name")
        if not isinstance(name, str):
            raise InvalidInput("a candidate without a name")
        validate_record_name(name)
        kind = raw.get("type")
        if kind not in TYPES:
            raise InvalidInput(f"{name}: unknown type {kind!r}")
        description, body = raw.get("description"), raw.get("body", "")
        if not isinstance(description, str) or not isinstance(body, str):
            raise InvalidInput(f"{name}: description and body must be text")
        try:
            description = validate_description(description)
            validate_body(body)
        except InvalidInput as exc:
            raise InvalidInput(f"{name}: {exc.message}") from None
        salience = raw.get("salience", 0)
        if isinstance(salience, bool) or not isinstance(salience, int | float):
            raise InvalidInput(f"{name}: salience must be a number")
        return cls(
            name=name,
            type=kind,
            description=description,
            body=body,
            salience=float(salience),
            durable=raw.get("durable") is True,
            recoverable=raw.get("recoverable") is True,
        )


class ExtractReply(NamedTuple):
    """The extract model's reply: its list of candidates, each still as proposed, since one bad
    candidate is dropped on its own (`Candidate.from_reply`) and never fails the others."""

    candidates: list[Any]

    @classmethod
    def from_reply(cls, data: Mapping[str, Any]) -> ExtractReply:
        """The reply's JSON object; ModelError when it holds no candidates list."""
        candidates = data.get("candidates")
        if not isinstance(candidates, list):
            raise ModelError('the extract model reply has no "candidates" list')
        return cls(candidates)


def bounded(text: str) -> str:
    """Model-provided text echoed in a decision, cut so a hostile reply cannot bloat the log, and
    with credential-shaped values redacted (the log says what kind was there, not the value)."""
    from ..redaction.detect import redact

    return shorten(redact(text)[0], 300)


Reconcile = Callable[["Extractor", Any, bool], Decision]


def redacting(reconcile: Reconcile) -> Reconcile:
    """reconcile over the candidate with its credential-shaped values redacted (nothing automatic
    stores a secret); the decision says what was redacted, never the value. A candidate whose
    name looks like a credential is dropped: the name becomes a file name."""
    from functools import wraps

    @wraps(reconcile)
    def weigh(self: Extractor, raw: Any, dry_run: bool) -> Decision:
        from ..redaction.detect import describe, find, kinds_of, redacted_noted

        if not isinstance(raw, dict):
            return reconcile(self, raw, dry_run)
        name = raw.get("name")
        if isinstance(name, str) and (named := find(name)):
            return Decision("candidate", "dropped", f"its name looks like {describe(kinds_of(named))}")
        clean, note = redacted_noted({key: value for key, value in raw.items() if key != "name"})
        decision = reconcile(self, {**clean, "name": name} if "name" in raw else clean, dry_run)
        return decision._replace(detail=decision.detail + note) if note else decision

    return weigh


def parse_transcript(lines: Iterable[str]) -> tuple[list[Message], list[str]]:
    """Messages from a JSONL transcript of any shape transcripts.py reads (Claude Code, Codex,
    OpenAI chat); what no shape fits is counted and reported, never guessed."""
    reading = read_transcript(lines)
    messages = [
        Message(turn.role, turn.content, tuple(call["function"]["name"] for call in turn.tool_calls or []))
        for turn in reading.turns
    ]
    problems = list(reading.problems)
    if reading.skipped > len(problems):
        problems.append(f"{reading.skipped} transcript line(s) skipped in all")
    return messages, problems


def latest_window(messages: list[Message], pairs: int = PAIRS) -> list[Message]:
    """The latest `pairs` user/assistant pairs and nothing more (tool and system messages left out).

    Walking back from the newest message, the window takes at most 2 × pairs messages and stops
    before a (pairs + 1)-th user turn, so a run of messages of one role never makes it grow.
    """
    talk = [m for m in messages if m.role in ("user", "assistant")]
    window: list[Message] = []
    user_turns = 0
    for message in reversed(talk):
        if len(window) == 2 * pairs:
            break
        starts_turn = message.role == "user" and (not window or window[0].role != "user")
        if starts_turn:
            if user_turns == pairs:
                break
            user_turns += 1
        window.insert(0, message)
    return window


def latest_exchange_wrote_memory(messages: list[Message]) -> bool:
    """Whether the assistant's latest exchange (its messages and tool results after the last user
    turn that it answered) called memory_save, memory_update or memory_delete."""
    end = len(messages)
    while end > 0 and messages[end - 1].role in ("user", "system"):
        end -= 1  # a trailing user turn has no assistant exchange yet: look at the one before
    start = end
    while start > 0 and messages[start - 1].role not in ("user", "system"):
        start -= 1
    return any(
        m.role == "assistant" and MEMORY_WRITE_TOOLS.intersection(map(aibuddy_tool, m.tool_names))
        for m in messages[start:end]
    )


def find_cues(window: list[Message]) -> list[str]:
    """Which kinds of cue the user's turns in the window contain."""
    return cue_kinds(m.content for m in window if m.role == "user")


class Extractor:
    def __init__(
        self,
        memory: MemoryService,
        settings: Settings | None = None,
        *,
        warnings: list[str] | None = None,
    ) -> None:
        """warnings: where a failed model or an unwritten log is reported (a session's sink)."""
        self.memory = memory
        self.settings = memory.settings if settings is None else settings
        self.config = memory.vault.config.extraction
        self.warnings: list[str] = [] if warnings is None else warnings
        # Records this reply created or updated (or would, on a dry run): name -> (type, description).
        self._reply: dict[str, tuple[str, str]] = {}

    def begin_reply(self) -> None:
        """Start weighing the candidates of a new reply (run does this itself)."""
        self._reply = {}

    def run(self, messages: list[Message], *, dry_run: bool = False, source: str = "") -> ExtractionResult:
        self.begin_reply()
        decisions: list[Decision] = []
        written: list[str] = []
        window = latest_window(messages)
        cues = find_cues(window)
        result = ExtractionResult(cues, dry_run, written, decisions)
        if not window:
            decisions.append(Decision("window", "skipped", "no user/assistant turns"))
            return self._log(result, source)
        if latest_exchange_wrote_memory(messages):
            decisions.append(Decision("window", "skipped", "the assistant already wrote memory explicitly"))
            return self._log(result, source)
        if not cues:
            decisions.append(Decision("cue", "no-cue", "no preference, identity, feedback or project cue"))
            return self._log(result, source)
        decisions.append(Decision("cue", "found", ", ".join(cues)))
        from ..models.calls import ModelCall, ModelSettings, complete_json

        extract = ModelCall("extract", self.memory.vault.config.models, self.settings)
        if not extract.configured:
            decisions.append(Decision("model", "skipped", "no model for the extract role: nothing written"))
            return self._log(result, source)

        def propose(role: ModelSettings) -> list[Any]:
            conversation = "\n\n".join(f"{m.role}: {m.content}" for m in window)
            reply = complete_json(
                role,
                [
                    {"role": "system", "content": EXTRACT_PROMPT},
                    {"role": "user", "content": f"Cues found: {', '.join(cues)}\n\n{conversation}"},
                ],
            )
            return ExtractReply.from_reply(reply).candidates

        # A failure is a decision of the extraction log, not a warning.
        candidates = extract(propose, warnings=None)
        if candidates is None:
            decisions.append(Decision("model", "failed", str(extract.failure)))
            return self._log(result, source)
        decisions.append(Decision("model", "answered", f"{len(candidates)} candidate(s)"))
        max_writes = self.config.max_writes
        writes = 0
        for number, candidate in enumerate(candidates):
            if writes == max_writes or number == MAX_CANDIDATES:
                # A reply never writes more than max_writes records, nor makes aibuddy weigh an
                # endless list: what is left is logged as dropped, by name up to a bound.
                reason = (
                    f"over [extraction] max_writes ({max_writes})"
                    if writes == max_writes
                    else f"over {MAX_CANDIDATES} candidates in one reply"
                )
                rest = candidates[number:]
                for extra in rest[:MAX_LOGGED_DROPS]:
                    name = extra.get("name") if isinstance(extra, dict) else None
                    shown = name[:64] if isinstance(name, str) and name.isprintable() else None
                    decisions.append(Decision("candidate", "dropped", reason, shown))
                if len(rest) > MAX_LOGGED_DROPS:
                    more = len(rest) - MAX_LOGGED_DROPS
                    decisions.append(Decision("candidate", "dropped", f"{more} more: {reason}"))
                break
            try:
                decision = self.reconcile(candidate, dry_run)
            except AibuddyError as exc:  # one bad candidate never stops the others
                decision = Decision("candidate", "failed", bounded(exc.message))
            decisions.append(decision)
            if decision.outcome in WRITES:
                writes += 1
                if decision.outcome in ("created", "updated") and decision.name:
                    written.append(decision.name)
        return self._log(result, source)

    @redacting
    def reconcile(self, raw: Any, dry_run: bool) -> Decision:
        """One proposed record weighed against the user's records: dropped, a no-op, an update of
        a record extraction wrote, protected (a person wrote it), or a new `auto` record."""
        try:
            candidate = Candidate.from_reply(raw)
        except InvalidInput as exc:
            return Decision("candidate", "dropped", bounded(exc.message))
        name, kind = candidate.name, candidate.type
        if candidate.salience < self.config.min_salience:
            return Decision("candidate", "dropped", f"low salience ({candidate.salience:.2f})", name)
        if not candidate.durable:
            return Decision("candidate", "dropped", "not durable", name)
        if candidate.recoverable:
            return Decision("candidate", "dropped", "recoverable from files or connected systems", name)
        # An expired record is out of recall: a fact stated again is a new record, not an update
        # of one whose expiry would hide it at once (`memory review` proposes the expired one).
        live = self.memory.list_records(expired=False).records
        records = {item.record.name: item.record for item in live}
        known = {name: (record.type, record.description) for name, record in records.items()}
        known.update(self._reply)
        best: str | None = None
        closest: Comparison | None = None
        for other, (other_type, description) in known.items():
            if other_type != kind:
                continue
            # A record an earlier candidate of this reply wrote takes the same fact only.
            found = compare(description, candidate.description, replacement=other not in self._reply)
            if closest is None or found.score > closest.score:
                best, closest = other, found
        decision = self._weigh(candidate, best, closest, records, dry_run)
        if decision.outcome in WRITES and decision.name:
            self._reply[decision.name] = (kind, candidate.description)
        return decision

    def _weigh(
        self,
        candidate: Candidate,
        best: str | None,
        closest: Comparison | None,
        records: dict[str, MemoryRecord],
        dry_run: bool,
    ) -> Decision:
        """The decision on a valid candidate, given the closest same-type record."""
        name, kind = candidate.name, candidate.type
        score = closest.score if closest is not None else 0.0
        if best is not None and best not in records:  # written by this dry run only
            if score >= self.config.similarity:
                return Decision("write", "would-update", f"similar to {best} ({score:.2f})", best)
        elif best is not None:
            existing = self.memory.show(best)
            # Equivalent means the same content: a changed body (a moved deadline) is an update.
            equivalent = " ".join(existing.body.split()) == " ".join(candidate.body.split()) and (
                bool(candidate.body.strip()) or existing.description.strip() == candidate.description
            )
            # The same body is the same record, unless the descriptions differ in a key term
            # (two facts can share a body such as "Confirmed.").
            if equivalent and (score >= self.config.similarity or not (closest and closest.differing)):
                return Decision("candidate", "no-op", f"equivalent to {best}", best)
            if score >= self.config.similarity:
                if existing.provenance == "manual":
                    return Decision(
                        "write", "protected", f"similar to {best} ({score:.2f}), written by a person", best
                    )
                detail = f"similar to {best} ({score:.2f})"
                if dry_run:
                    return Decision("write", "would-update", detail, best)
                if self.config.review:  # a person accepts it first (memory/pending.py)
                    self._propose("update", best, existing.type, candidate, detail)
                    return Decision("write", "proposed", detail, best)
                self.memory.update_auto(best, description=candidate.description, body=candidate.body)
                return Decision("write", "updated", detail, best)
        detail = f"new {kind} record"
        if closest is not None and closest.differing:
            detail += f" ({best} is a different fact: {closest.explain()})"
        name = self._free_name(name)
        if dry_run:
            return Decision("write", "would-create", detail, name)
        try:
            if self.config.review:  # a person accepts it first (memory/pending.py)
                self._propose("create", name, kind, candidate, detail)
                return Decision("write", "proposed", detail, name)
            self.memory.create_auto(name, type=kind, description=candidate.description, body=candidate.body)
        except AibuddyError as exc:
            return Decision("write", "failed", exc.message, name)
        return Decision("write", "created", detail, name)

    def _propose(self, action: Action, name: str, kind: str, candidate: Candidate, reason: str) -> None:
        Pending(self.memory).propose(
            action, name, type=kind, description=candidate.description, body=candidate.body, reason=reason
        )

    def _free_name(self, name: str) -> str:
        listed = self.memory.list_records()
        taken = {item.record.name for item in listed.records} | {p.name for p in listed.problems}
        taken |= set(self._reply)
        candidate, number = name, 1
        while candidate in taken:
            number += 1
            candidate = f"{name[:60]}-{number}"
        return candidate

    def _log(self, result: ExtractionResult, source: str) -> ExtractionResult:
        """Append the decisions to .aibuddy/logs/extraction.jsonl through the store (not on a dry
        run). A log that cannot be written is a warning: it never undoes or stops the extraction."""
        if result.dry_run:
            return result
        from ..redaction.detect import redacted

        entry = {"at": utc_now(), "user": self.memory.user, "source": source, **to_json(result)}
        line = json.dumps(redacted(entry), ensure_ascii=False) + "\n"
        try:
            self.memory.store.append(EXTRACTION_LOG, line.encode("utf-8"))
        except (AibuddyError, OSError) as exc:
            self.warnings.append(f"extraction log not written: {getattr(exc, 'message', None) or exc}")
        return result
