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
from collections.abc import Mapping
from typing import Any

from ..errors import ModelError, NotFound
from ..knowledge.service import KnowledgeService
from ..memory.service import MemoryService
from ..vault import Vault
from .service import TaskMessage, TaskService

COMPACT_PROMPT = (
    "Summarise this conversation history for the assistant that continues the task: decisions, "
    "facts established, open questions, and the state of the work. Keep names, numbers and file "
    "paths exact. Plain text, at most 250 words."
)


def estimate_tokens(text: str) -> int:
    """A provider-neutral estimate: about four characters a token, plus per-message overhead."""
    return len(text) // 4 + 4


def digest_line(message: TaskMessage) -> str:
    """One line standing for a message in the deterministic digest."""
    if message.role == "tool":
        status = "error" if _looks_failed(message.content) else "ok"
        return f"#{message.n} tool result: {status} ({len(message.content)} chars)"
    first = next((line.strip() for line in message.content.splitlines() if line.strip()), "")
    if len(first) > 160:
        first = first[:159] + "…"
    return f"#{message.n} {message.role}: {first}"


def _looks_failed(content: str) -> bool:
    head = content.lstrip()[:200].lower()
    if head.startswith(("error", "traceback", "exception", "failed")):
        return True
    try:
        data = json.loads(content)
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data.get("error"))


class ContextAssembler:
    def __init__(self, vault: Vault, user: str, *, environ: Mapping[str, str] | None = None) -> None:
        self.vault = vault
        self.user = user
        self.tasks = TaskService(vault, user)
        self.memory = MemoryService(vault, user, environ=environ)
        self.knowledge = KnowledgeService(vault, user, store=self.tasks.store, environ=environ)
        self.environ = self.memory.environ
        self.warnings: list[str] = []

    def assemble(self, task_id: str, query: str | None = None) -> dict[str, Any]:
        task = self.tasks.get(task_id)
        messages = self.tasks.messages(task_id)
        older, recent = self._split(messages)
        summary = self._summary(task_id, older) if older else None
        memories = self._memories(
            task_id, task.recalled, query or self._default_query(task.goal, messages), len(messages)
        )
        documents, unavailable = self.knowledge.map(task_id)
        self.warnings += self.tasks.warnings + self.knowledge.warnings
        return {
            "task": task.id,
            "goal": task.goal,
            "plan": task.plan,
            "status": task.status,
            "summary": summary,
            "messages": [m.to_json() for m in recent],
            "memories": memories,
            "documents": [entry.to_json() for entry in documents],
            "unavailable_documents": unavailable,
            "estimated_tokens": sum(estimate_tokens(m.content) for m in recent)
            + (estimate_tokens(summary["text"]) if summary else 0),
        }

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

    def _summary(self, task_id: str, older: list[TaskMessage]) -> dict[str, Any]:
        covered = hashlib.sha256(
            json.dumps([m.to_json() for m in older], ensure_ascii=False).encode()
        ).hexdigest()
        key = self.tasks._key(task_id, "summary.json")
        try:
            cached = json.loads(self.tasks.store.read(key)[0])
            if cached.get("sha256") == covered:
                return {k: cached[k] for k in ("text", "method", "covers")}
        except (NotFound, ValueError, KeyError):
            pass
        covers = [older[0].n, older[-1].n]
        text, method = self._compact(older)
        summary = {"text": text, "method": method, "covers": covers}
        if method == "model":  # a digest is cheap to rebuild; only model summaries are worth keeping
            data = json.dumps({**summary, "sha256": covered}, ensure_ascii=False, indent=2) + "\n"
            with self.tasks.lock():
                self.tasks.store.write(key, data.encode("utf-8"))
        return summary

    def _compact(self, older: list[TaskMessage]) -> tuple[str, str]:
        from ..models import complete_text, model_settings

        role = model_settings("compact", self.vault.config.models, self.environ)
        if role.configured:
            history = "\n\n".join(f"#{m.n} {m.role}: {m.content[:4000]}" for m in older)
            try:
                text = complete_text(
                    role,
                    [{"role": "system", "content": COMPACT_PROMPT}, {"role": "user", "content": history}],
                )
                return text.strip(), "model"
            except ModelError as exc:
                self.warnings.append(f"{exc}; used a deterministic digest of the older messages")
        return self._digest(older), "digest"

    def _digest(self, older: list[TaskMessage]) -> str:
        """One line per message, newest kept first, within half the compaction threshold."""
        budget = self.vault.config.context.compact_at_tokens // 2
        lines: list[str] = []
        for message in reversed(older):
            line = digest_line(message)
            if lines and estimate_tokens("\n".join([line, *lines])) > budget:
                skipped = message.n - older[0].n + 1
                lines.insert(0, f"(messages {older[0].n}-{message.n}: {skipped} more, not shown)")
                break
            lines.insert(0, line)
        return "\n".join(lines)

    @staticmethod
    def _default_query(goal: str, messages: list[TaskMessage]) -> str:
        last_user = next((m.content for m in reversed(messages) if m.role == "user"), "")
        return f"{goal}\n{last_user[:2000]}"

    def _memories(self, task_id: str, recalled: dict[str, int], query: str, count: int) -> dict[str, Any]:
        """At most five recalled records; those an earlier message already received appear only
        by name and status, so the context does not repeat their bodies."""
        result = self.memory.recall(query)
        self.warnings += result.warnings
        fresh = [r for r in result.records if r.name not in recalled]
        seen = [r for r in result.records if r.name in recalled]
        if fresh:
            self.tasks.mark_recalled(task_id, [r.name for r in fresh], count)
        return {
            "method": result.method,
            "records": [r.to_json() for r in fresh],
            "already_in_context": {
                "count": len(seen),
                "records": [{"name": r.name, "since_message": recalled[r.name]} for r in seen],
            },
        }
