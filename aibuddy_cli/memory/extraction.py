"""Automatic memory extraction from a conversation: gated, reconciled, never over a person's words.

Pipeline: the latest three user/assistant pairs → skip if the assistant just wrote memory
explicitly → a deterministic cue gate (no cue, no model call) → the `extract` model proposes
candidates → each is validated and reconciled against the user's records: low salience, not
durable or recoverable elsewhere is dropped; equivalent content is a no-op; a same-type record
with a similar description is updated if extraction wrote it, and left alone if a person did;
anything else becomes a new record with provenance `auto`. Every decision is logged.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from difflib import SequenceMatcher
from typing import Any, NamedTuple

from ..clock import utc_now
from ..errors import AibuddyError, InvalidInput, ModelError
from ..text import tokens
from ..vault import validate_record_name
from .records import TYPES, validate_body, validate_description
from .service import MemoryService

MEMORY_WRITE_TOOLS = frozenset({"memory_save", "memory_update", "memory_delete"})
PAIRS = 3

# Deterministic cues, English and Chinese. A cue only opens the gate; the model decides what to keep.
CUES: dict[str, re.Pattern[str]] = {
    "preference": re.compile(
        r"\b(i (really )?(prefer|like|love|hate|dislike|want|need)|i'd rather|i don't (like|want)|"
        r"please (always|never|use|don't)|from now on|always use|never use|by default)\b"
        r"|我(更)?(喜欢|希望|想要|讨厌|不喜欢)|以后(都|请)?|总是|请(用|不要|别)|默认",
        re.IGNORECASE,
    ),
    "identity": re.compile(
        r"\b(i am an? |i'm an? |my name is|call me|i work (at|on|as|for|in)|my role is|my team)\b"
        r"|我(是|叫)|我在.{1,12}(工作|负责)|我的(角色|团队|职位)",
        re.IGNORECASE,
    ),
    "feedback": re.compile(
        r"\b(no,|that's (wrong|not right|incorrect)|that is (wrong|incorrect)|don't do|stop doing|"
        r"instead of|you should(n't| not)?|next time|too (long|verbose|short)|not what i asked)\b"
        r"|不对|错了|别再|不要再|下次|太(长|啰嗦|短)|应该",
        re.IGNORECASE,
    ),
    "project": re.compile(
        r"\b(our (team|project|repo|service|product|company|release)|we use|we decided|deadline|"
        r"code freeze|merge freeze|the project|is due|launch(es)? on)\b"
        r"|我们(的)?(项目|团队|仓库|服务|产品)|我们(用|决定)|截止|上线|冻结",
        re.IGNORECASE,
    ),
}

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


class Message(NamedTuple):
    role: str
    content: str
    tool_names: tuple[str, ...] = ()


class Decision(NamedTuple):
    step: str  # window | cue | model | candidate | write
    outcome: str  # e.g. no-cue, skipped, dropped, no-op, created, updated, protected, failed
    detail: str
    name: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self._asdict().items() if v is not None}


class ExtractionResult(NamedTuple):
    cues: list[str]
    decisions: list[Decision]
    written: list[str]  # record names created or updated
    dry_run: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "cues": self.cues,
            "dry_run": self.dry_run,
            "written": self.written,
            "decisions": [d.to_json() for d in self.decisions],
        }


def parse_transcript(lines: Iterable[str]) -> tuple[list[Message], list[str]]:
    """Messages from JSONL in the OpenAI shape; unreadable lines are reported, not guessed."""
    messages: list[Message] = []
    problems: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            role = raw["role"]
            content = raw.get("content") or ""
            if not isinstance(role, str) or not isinstance(content, str):
                raise TypeError("role and content must be strings")
            calls = raw.get("tool_calls") or []
            names = tuple(
                str(call.get("function", {}).get("name", "")) for call in calls if isinstance(call, dict)
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            problems.append(f"transcript line {number} skipped: {exc}")
            continue
        messages.append(Message(role, content, names))
    return messages, problems


def latest_window(messages: list[Message], pairs: int = PAIRS) -> list[Message]:
    """The latest `pairs` user/assistant pairs (tool and system messages left out)."""
    talk = [m for m in messages if m.role in ("user", "assistant")]
    window: list[Message] = []
    count = 0
    index = len(talk) - 1
    while index >= 0 and count < pairs:
        if talk[index].role == "assistant" and index > 0 and talk[index - 1].role == "user":
            window[:0] = talk[index - 1 : index + 1]
            count += 1
            index -= 2
        else:
            window.insert(0, talk[index])
            index -= 1
    return window


def find_cues(window: list[Message]) -> list[str]:
    """Which kinds of cue the user's turns in the window contain."""
    text = "\n".join(m.content for m in window if m.role == "user")
    return [kind for kind, pattern in CUES.items() if pattern.search(text)]


def similarity(a: str, b: str) -> float:
    """Description similarity on word and CJK-character tokens, 0..1."""
    left, right = tokens(a), tokens(b)
    if not left or not right:
        return 0.0
    return SequenceMatcher(None, left, right, autojunk=False).ratio()


class Extractor:
    def __init__(self, memory: MemoryService, environ: Mapping[str, str] | None = None) -> None:
        self.memory = memory
        self.environ = memory.environ if environ is None else environ
        self.settings = memory.vault.config.extraction

    def run(self, messages: list[Message], *, dry_run: bool = False, source: str = "") -> ExtractionResult:
        decisions: list[Decision] = []
        written: list[str] = []
        window = latest_window(messages)
        cues = find_cues(window)
        result = ExtractionResult(cues, decisions, written, dry_run)
        if not window:
            decisions.append(Decision("window", "skipped", "no user/assistant turns"))
            return self._log(result, source)
        last_assistant = next((m for m in reversed(window) if m.role == "assistant"), None)
        if last_assistant and MEMORY_WRITE_TOOLS.intersection(last_assistant.tool_names):
            decisions.append(Decision("window", "skipped", "the assistant already wrote memory explicitly"))
            return self._log(result, source)
        if not cues:
            decisions.append(Decision("cue", "no-cue", "no preference, identity, feedback or project cue"))
            return self._log(result, source)
        decisions.append(Decision("cue", "found", ", ".join(cues)))
        from ..models import complete_json, model_settings

        role = model_settings("extract", self.memory.vault.config.models, self.environ)
        if not role.configured:
            decisions.append(Decision("model", "skipped", "no model for the extract role: nothing written"))
            return self._log(result, source)
        conversation = "\n\n".join(f"{m.role}: {m.content}" for m in window)
        try:
            reply = complete_json(
                role,
                [
                    {"role": "system", "content": EXTRACT_PROMPT},
                    {"role": "user", "content": f"Cues found: {', '.join(cues)}\n\n{conversation}"},
                ],
            )
            candidates = reply.get("candidates")
            if not isinstance(candidates, list):
                raise ModelError('the extract model reply has no "candidates" list')
        except ModelError as exc:
            decisions.append(Decision("model", "failed", str(exc)))
            return self._log(result, source)
        decisions.append(Decision("model", "answered", f"{len(candidates)} candidate(s)"))
        for candidate in candidates:
            try:
                decision = self._reconcile(candidate, dry_run)
            except AibuddyError as exc:  # one bad candidate never stops the others
                decision = Decision("candidate", "failed", exc.message)
            decisions.append(decision)
            if decision.outcome in ("created", "updated") and decision.name:
                written.append(decision.name)
        return self._log(result, source)

    def _reconcile(self, raw: Any, dry_run: bool) -> Decision:
        try:
            candidate = _validate(raw)
        except InvalidInput as exc:
            return Decision("candidate", "dropped", exc.message)
        name, kind = candidate["name"], candidate["type"]
        if candidate["salience"] < self.settings.min_salience:
            return Decision("candidate", "dropped", f"low salience ({candidate['salience']:.2f})", name)
        if not candidate["durable"]:
            return Decision("candidate", "dropped", "not durable", name)
        if candidate["recoverable"]:
            return Decision("candidate", "dropped", "recoverable from files or connected systems", name)
        best, best_score = None, 0.0
        for item in self.memory.list().records:
            record = item.record
            if record.type != kind:
                continue
            score = similarity(record.description, candidate["description"])
            if score > best_score:
                best, best_score = record, score
        if best is not None:
            existing = self.memory.show(best.name)
            equivalent = existing.description.strip() == candidate["description"] or (
                bool(candidate["body"].strip()) and existing.body.strip() == candidate["body"].strip()
            )
            if equivalent:
                return Decision("candidate", "no-op", f"equivalent to {best.name}", best.name)
            if best_score >= self.settings.similarity:
                if existing.provenance == "manual":
                    return Decision(
                        "write",
                        "protected",
                        f"similar to {best.name} ({best_score:.2f}), written by a person",
                        best.name,
                    )
                detail = f"similar to {best.name} ({best_score:.2f})"
                if dry_run:
                    return Decision("write", "would-update", detail, best.name)
                self.memory.update_auto(
                    best.name, description=candidate["description"], body=candidate["body"]
                )
                return Decision("write", "updated", detail, best.name)
        name = self._free_name(name)
        if dry_run:
            return Decision("write", "would-create", f"new {kind} record", name)
        try:
            self.memory.create_auto(
                name, type=kind, description=candidate["description"], body=candidate["body"]
            )
        except AibuddyError as exc:
            return Decision("write", "failed", exc.message, name)
        return Decision("write", "created", f"new {kind} record", name)

    def _free_name(self, name: str) -> str:
        taken = {item.record.name for item in self.memory.list().records} | {
            p.name for p in self.memory.list().problems
        }
        candidate, number = name, 1
        while candidate in taken:
            number += 1
            candidate = f"{name[:60]}-{number}"
        return candidate

    def _log(self, result: ExtractionResult, source: str) -> ExtractionResult:
        """Append the decisions to .aibuddy/logs/extraction.jsonl (not on a dry run)."""
        if result.dry_run:
            return result
        entry = {"at": utc_now(), "user": self.memory.user, "source": source, **result.to_json()}
        log = self.memory.vault.cache_dir / "logs" / "extraction.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)  # never via a symlink
        with self.memory.store.lock("extraction-log"):
            fd = os.open(log, flags, 0o644)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return result


def _validate(raw: Any) -> dict[str, Any]:
    """A candidate as the model proposed it, checked field by field. Provenance is never read."""
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
    return {
        "name": name,
        "type": kind,
        "description": description,
        "body": body,
        "salience": float(salience),
        "durable": raw.get("durable") is True,
        "recoverable": raw.get("recoverable") is True,
    }
