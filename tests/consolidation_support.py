"""Shared by the tests of test_consolidation and those that build on them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import ModelError
from aibuddy_cli.tasks.consolidation import Consolidator
from aibuddy_cli.vault import Vault

MODEL = {"AIBUDDY_MODEL_CONSOLIDATE": "openai/consolidate-test", "AIBUDDY_TIMEOUT": "30"}


def every(vault: Vault, n: int) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(re.sub(r"(?m)^every = \d+$", f"every = {n}", config.read_text()))


def watermark(vault: Vault, task: str = "t1") -> dict | None:
    path = vault.root / "tasks" / "demo" / task / "consolidation.json"
    return json.loads(path.read_text()) if path.exists() else None


def log(vault: Vault) -> list[dict]:
    path = vault.root / ".aibuddy/logs/consolidation.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class ScriptedModel:
    """The consolidate model in process: the replies a test queues (text, a ModelError, or a
    function giving the text), and the requests it was sent."""

    def __init__(self) -> None:
        self.replies: list[str | ModelError | Callable[[], str]] = []
        self.requests: list[list[dict[str, str]]] = []

    def reply_json(self, data: Any) -> None:
        self.replies.append(json.dumps(data))

    def __call__(self, settings: Any, messages: list[dict[str, str]]) -> str:
        assert settings.role == "consolidate" and settings.model == MODEL["AIBUDDY_MODEL_CONSOLIDATE"]
        self.requests.append(messages)
        if not self.replies:
            raise ModelError("the scripted model has no reply left")
        reply = self.replies.pop(0)
        if isinstance(reply, ModelError):
            raise reply
        return reply if isinstance(reply, str) else reply()


def consolidator(session: Session, model: ScriptedModel, **options: Any) -> Consolidator:
    return Consolidator(
        session.tasks, session.memory, lambda: session.tables, session.settings, complete=model, **options
    )


REPLY = {
    "memory": [
        {
            "type": "user",
            "name": "diet",
            "description": "Vegetarian",
            "body": "The user is vegetarian.",
            "evidence": [1],
        },
        {"type": "user", "name": "shoe-size", "description": "Shoe size 44", "body": "44", "evidence": [9]},
        {"type": "project", "name": "ghost", "description": "No evidence", "body": "x"},
        {"type": "project", "name": "offsite-budget", "description": "Budget", "body": "5k", "evidence": [2]},
        {
            "type": "project",
            "name": "old-venue",
            "description": "Old venue",
            "body": "Hall A",
            "evidence": [2],
        },
    ],
    "contacts": [{"name": "Maria Lopez", "bio": "Handles the venue", "evidence": [3]}],
    "summary": {"text": "Planning an offsite; Maria handles the venue.", "evidence": [1, 3]},
}
