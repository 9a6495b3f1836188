"""One tool registry and one bounded agent loop, for every model that works through tools.

A Tool is one operation offered to a model: its name, description and JSON schema, and the
function that runs it (after simonw/llm's Tool). `agent_loop` asks a model, runs the tools it
calls and hands their results back until the model answers without calling a tool. It is
bounded twice: by steps (model turns) and by a budget on the tool output the model reads. A
tool's failure (unknown tool, arguments that are not a JSON object or do not fit, a typed
AibuddyError) goes back to the model as the tool's result, `{"error": "…"}`; it never ends the
loop. Arguments are strict JSON (no NaN or Infinity) and are checked against the tool's
declared parameters (tool_arguments.py) before the tool runs. The model itself is injected as
`complete`, so tests drive the loop in-process with scripted replies, and the same loop serves
litellm, an MCP client or a test double.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from .. import jsonvalues
from ..errors import AibuddyError, ModelError, tool_words
from .tool_arguments import check_arguments

if TYPE_CHECKING:
    from .calls import ModelSettings

C = TypeVar("C")  # what the tools act on: a session, or one operation's context

CHARS_PER_TOKEN = 4  # as for the task context estimate
BUDGET_USED_UP = "reading budget used up; answer now with what you have"


@dataclass(frozen=True)
class Tool(Generic[C]):
    """One operation a model may call. `run(context, args)` returns the JSON-able result; it
    raises ValueError or TypeError for arguments that do not fit, AibuddyError for a refusal."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON schema of the arguments object
    run: Callable[[C, dict[str, Any]], Any]

    def spec(self) -> dict[str, Any]:
        """The tool as chat-completion APIs (OpenAI, litellm) declare it."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolCall(NamedTuple):
    id: str
    name: str
    arguments: Any  # a JSON text as APIs send it, or already a mapping


class AssistantTurn(NamedTuple):
    """A model's reply: text, tool calls, or both."""

    content: str | None
    tool_calls: list[ToolCall]

    @classmethod
    def of(cls, message: Any) -> AssistantTurn:
        """litellm's message object, a plain dict in the same shape, or an AssistantTurn."""
        if isinstance(message, AssistantTurn):
            return message
        calls = []
        for number, call in enumerate(_field(message, "tool_calls") or []):
            function = _field(call, "function")
            calls.append(
                ToolCall(
                    id=_field(call, "id") or f"call_{number}",
                    name=_field(function, "name"),
                    arguments=_field(function, "arguments"),
                )
            )
        return cls(_field(message, "content"), calls)

    def to_message(self) -> dict[str, Any]:
        """The turn as it goes back into the conversation."""
        return {
            "role": "assistant",
            "content": self.content,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ],
        }


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


# A model: the conversation so far and the tools it may call → its next assistant message.
Complete = Callable[[list[dict[str, Any]], Sequence[Tool[Any]]], Any]


class LoopEvent(NamedTuple):
    """What an agent loop just did, for a caller that shows a run as it goes: a model's turn
    (`tool` None; `calls`: the tools it calls, none when it answered), or one tool call that ran,
    with the arguments the model gave and the result it reads (JSON text)."""

    step: int  # the model turn, from 1
    calls: tuple[str, ...] = ()
    tool: str | None = None
    arguments: Any = None
    result: str | None = None


class ToolBox(Generic[C]):
    """Tools by name over one context, with the budget of tool output the model may read."""

    def __init__(self, tools: Sequence[Tool[C]], context: C, budget_tokens: int) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.context = context
        self.budget_chars = budget_tokens * CHARS_PER_TOKEN
        self.used_chars = 0

    def run(self, name: str, arguments: Any) -> str:
        """The tool's result as JSON text; every failure is an `{"error": …}` result."""
        if self.used_chars >= self.budget_chars:
            return json.dumps({"error": BUDGET_USED_UP})
        try:
            args = jsonvalues.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            if not isinstance(args, dict):
                raise ValueError("arguments must be an object")
            tool = self.tools.get(name)
            if tool is None:
                known = ", ".join(self.tools)
                result: Any = {"error": f"unknown tool {name!r}; the tools are {known}"}
            else:
                result = tool.run(self.context, check_arguments(tool.parameters, args))
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            result = {"error": f"bad arguments for {name}: {exc}"}
        except AibuddyError as exc:  # in the model's words: its tools and their arguments
            result = {"error": exc.worded(tool_words(self.tools))}
        try:
            text = json.dumps(result, ensure_ascii=False, allow_nan=False)
        except ValueError:  # a NaN or an infinity: no model API takes it as JSON
            text = json.dumps({"error": f"{name} gave a result JSON cannot hold (NaN or Infinity)"})
        self.used_chars += len(text)
        return text


def agent_loop(
    complete: Complete,
    tools: Sequence[Tool[C]],
    messages: Sequence[Mapping[str, Any]],
    *,
    context: C,
    max_steps: int,
    budget_tokens: int,
    agent: str = "agent",
    observe: Callable[[LoopEvent], None] | None = None,
    transcript: list[dict[str, Any]] | None = None,
) -> str:
    """Run the model until it answers without calling a tool; return that answer's text.

    Each step is one model call, whose tool calls all run before the next. Raises ModelError when
    `max_steps` calls pass without an answer (and lets `complete`'s own ModelError through), so a
    caller falls back as for any other model failure. `observe` is told each turn and each tool
    call as it happens (after the tool's result joined the conversation); `transcript`, when
    given, is the conversation itself, kept as it grows (the messages, each turn and result, the
    answer), so a caller still has it when the loop ends any way.
    """
    conversation = transcript if transcript is not None else []
    conversation[:] = [dict(message) for message in messages]
    toolbox = ToolBox(tools, context, budget_tokens)
    for step in range(1, max_steps + 1):
        turn = AssistantTurn.of(complete(conversation, tools))
        if observe is not None:
            observe(LoopEvent(step, tuple(call.name for call in turn.tool_calls)))
        if not turn.tool_calls:
            conversation.append({"role": "assistant", "content": turn.content or ""})
            return turn.content or ""
        conversation.append(turn.to_message())
        for call in turn.tool_calls:
            result = toolbox.run(call.name, call.arguments)
            conversation.append({"role": "tool", "tool_call_id": call.id, "content": result})
            if observe is not None:
                observe(LoopEvent(step, tool=call.name, arguments=call.arguments, result=result))
    raise ModelError(f"the {agent} model used all {max_steps} steps without answering")


def litellm_complete(settings: ModelSettings) -> Complete:
    """`complete` through litellm with one role's settings."""
    from .calls import complete

    def call(messages: list[dict[str, Any]], tools: Sequence[Tool[Any]]) -> Any:
        return complete(settings, messages, tools=[tool.spec() for tool in tools], temperature=0)

    return call
