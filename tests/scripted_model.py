"""A model whose replies a test queues, driven in-process (after simonw/llm's MockModel.enqueue)."""

from __future__ import annotations

import json
from typing import Any

from aibuddy_cli.errors import ModelError
from aibuddy_cli.models.agent import AssistantTurn, ToolCall


class ScriptedModel:
    """A model whose replies the test queues; it records every conversation it was shown."""

    def __init__(self) -> None:
        self.replies: list[AssistantTurn] = []
        self.seen: list[list[dict[str, Any]]] = []

    def answer(self, text: str) -> None:
        self.replies.append(AssistantTurn(text, []))

    def call(self, *calls: tuple[str, Any]) -> None:
        """Queue a turn calling tools: (name, arguments), arguments a dict or raw JSON text."""
        start = sum(len(turn.tool_calls) for turn in self.replies)
        self.replies.append(
            AssistantTurn(
                None,
                [
                    ToolCall(f"c{start + i}", name, args if isinstance(args, str) else json.dumps(args))
                    for i, (name, args) in enumerate(calls)
                ],
            )
        )

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> AssistantTurn:
        self.seen.append([dict(m) for m in messages])
        if not self.replies:
            raise ModelError("the scripted model has no reply left")
        return self.replies.pop(0)

    def tool_results(self, turn: int = -1) -> list[dict[str, Any]]:
        """The tool results in the conversation the model saw at `turn`, decoded."""
        return [json.loads(m["content"]) for m in self.seen[turn] if m["role"] == "tool"]
