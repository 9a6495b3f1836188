"""The bounded agent loop, driven in-process by a scripted model (after simonw/llm's MockModel):
tools run and their results go back to the model; a tool's failure is data, never a crash; steps
and tool output are bounded. kb ask's own tests (test_ask.py) go through litellm end to end."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_model import ScriptedModel

from aibuddy_cli.errors import ModelError, NotFound
from aibuddy_cli.models.agent import BUDGET_USED_UP, Tool, agent_loop
from aibuddy_cli.operations.loops.kb_ask import TOOLS


class Notes:
    """A tiny context for the tools: named notes."""

    def __init__(self) -> None:
        self.notes = {"tea": "green, no sugar", "long": "x" * 400}
        self.reads: list[str] = []


def read_note(notes: Notes, args: dict[str, Any]) -> dict[str, Any]:
    name = args.get("name")
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    if name not in notes.notes:
        raise NotFound(f"no note {name!r}")
    notes.reads.append(name)
    return {"name": name, "text": notes.notes[name]}


READ_NOTE = Tool(
    "read_note",
    "Read one note by name.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    read_note,
)
QUESTION = [{"role": "user", "content": "How do I take my tea?"}]


def run(model: ScriptedModel, notes: Notes, *, max_steps: int = 5, budget_tokens: int = 1000) -> str:
    return agent_loop(
        model, [READ_NOTE], QUESTION, context=notes, max_steps=max_steps, budget_tokens=budget_tokens
    )


def test_a_tool_call_then_a_final_answer() -> None:
    model, notes = ScriptedModel(), Notes()
    model.call(("read_note", {"name": "tea"}))
    model.answer("Green, without sugar.")
    assert run(model, notes) == "Green, without sugar."
    assert notes.reads == ["tea"]
    first, second = model.seen
    assert first == QUESTION
    assistant, tool = second[-2:]
    assert assistant["role"] == "assistant" and assistant["tool_calls"] == [
        {"id": "c0", "type": "function", "function": {"name": "read_note", "arguments": '{"name": "tea"}'}}
    ]
    assert tool["tool_call_id"] == "c0"
    assert json.loads(tool["content"]) == {"name": "tea", "text": "green, no sugar"}
    assert QUESTION == [{"role": "user", "content": "How do I take my tea?"}]  # the caller's list untouched


def test_an_unknown_tool_is_an_error_result_and_the_loop_goes_on() -> None:
    model, notes = ScriptedModel(), Notes()
    model.call(("memory_clear", {}), ("read_note", {"name": "tea"}))
    model.answer("done")
    assert run(model, notes) == "done"
    unknown, known = model.tool_results()
    assert unknown == {"error": "unknown tool 'memory_clear'; the tools are read_note"}
    assert known["text"] == "green, no sugar"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("not json", "bad arguments for read_note: Expecting value"),
        ("[1, 2]", "bad arguments for read_note: arguments must be an object"),
        ('{"name": 42}', "bad arguments for read_note: name: 42 is not of type 'string'"),
        ("{}", "bad arguments for read_note: 'name' is a required property"),
    ],
)
def test_bad_arguments_go_back_to_the_model(arguments: str, message: str) -> None:
    model, notes = ScriptedModel(), Notes()
    model.call(("read_note", arguments))
    model.answer("sorry")
    assert run(model, notes) == "sorry"
    (result,) = model.tool_results()
    assert result["error"].startswith(message)


def test_a_typed_error_from_a_tool_is_its_result() -> None:
    model, notes = ScriptedModel(), Notes()
    model.call(("read_note", {"name": "coffee"}))
    model.answer("no note about coffee")
    assert run(model, notes) == "no note about coffee"
    assert model.tool_results() == [{"error": "no note 'coffee'"}]


def test_the_step_bound_ends_the_loop_as_a_model_failure() -> None:
    model, notes = ScriptedModel(), Notes()
    for _ in range(10):
        model.call(("read_note", {"name": "tea"}))
    with pytest.raises(ModelError, match="the knowledge model used all 3 steps without answering"):
        agent_loop(
            model, [READ_NOTE], QUESTION, context=notes, max_steps=3, budget_tokens=1000, agent="knowledge"
        )
    assert len(model.seen) == 3 and len(notes.reads) == 3


def test_the_budget_stops_tool_output_and_asks_for_an_answer() -> None:
    model, notes = ScriptedModel(), Notes()
    model.call(("read_note", {"name": "long"}), ("read_note", {"name": "tea"}))
    model.call(("read_note", {"name": "tea"}))
    model.answer("enough")
    assert run(model, notes, budget_tokens=50) == "enough"  # 200 characters
    first, second = model.tool_results(1)
    assert first["name"] == "long" and second == {"error": BUDGET_USED_UP}
    assert model.tool_results(2)[-1] == {"error": BUDGET_USED_UP}
    assert notes.reads == ["long"]  # over budget, the tool does not run at all


def test_a_model_failure_ends_the_loop_as_a_model_error() -> None:
    model, notes = ScriptedModel(), Notes()
    model.call(("read_note", {"name": "tea"}))
    with pytest.raises(ModelError, match="no reply left"):
        run(model, notes)


def test_replies_in_the_litellm_shape_and_as_plain_dicts_are_read_alike() -> None:
    class Function:
        name, arguments = "read_note", '{"name": "tea"}'

    class Call:
        id, function = "x1", Function()

    class Message:
        content, tool_calls = None, [Call()]

    replies: list[Any] = [Message(), {"content": "ok", "tool_calls": None}]
    notes = Notes()

    def complete(messages: list[dict[str, Any]], tools: Any) -> Any:
        return replies.pop(0)

    assert agent_loop(complete, [READ_NOTE], QUESTION, context=notes, max_steps=2, budget_tokens=9) == "ok"
    assert notes.reads == ["tea"]


def test_the_knowledge_tools_are_derived_from_the_kb_operations_with_their_schemas() -> None:
    specs = {tool.spec()["function"]["name"]: tool.spec() for tool in TOOLS}
    assert set(specs) == {"search_docs", "read_doc", "read_section"}
    assert all(set(s) == {"type", "function"} and s["type"] == "function" for s in specs.values())
    assert specs["search_docs"]["function"]["parameters"]["required"] == ["query"]
    # DOC ANCHOR, or one citation DOC#ANCHOR in doc, as `kb read` takes them
    section = specs["read_section"]["function"]["parameters"]
    assert section["required"] == ["doc"] and set(section["properties"]) == {"doc", "anchor", "cursor"}
    for spec in specs.values():  # the task is the loop's: never an argument the model gives
        assert "task" not in spec["function"]["parameters"]["properties"]
