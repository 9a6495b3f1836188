"""Every MCP tool, through the SDK's client: its happy path answers with its result document, and a
refusal is a tool error that a model can read (the CLI's error document). A tool added to the
registry without a case here fails `test_every_tool_has_a_case`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import FIXTURE_DOCS, environment, ok

from aibuddy_cli.operations.registry import offered
from aibuddy_cli.settings import Settings
from aibuddy_cli.vault import Vault

pytest.importorskip("mcp")

# (tool, arguments, whether it must be refused); run in this order against one vault.
CASES: list[tuple[str, dict[str, Any], bool]] = [
    (
        "memory_save",
        {"name": "tea", "type": "user", "description": "Drinks green tea", "body": "Sencha"},
        False,
    ),
    ("memory_save", {"name": "../x", "type": "user", "description": "x"}, True),
    ("memory_update", {"name": "tea", "description": "Drinks green tea, no sugar"}, False),
    ("memory_update", {"name": "coffee", "description": "x"}, True),
    ("memory_show", {"name": "tea"}, False),
    ("memory_show", {"name": "coffee"}, True),
    ("memory_history", {"name": "tea"}, False),
    ("memory_history", {"name": "Not A Name"}, True),
    ("memory_list", {}, False),
    ("memory_manifest", {"query": "tea"}, False),
    ("memory_manifest", {"query": 5}, True),
    ("memory_recall", {"query": "green tea"}, False),
    ("memory_recall", {"query": "   "}, True),
    ("table_create", {"name": "people", "columns": {"name": "str", "age": "int"}}, False),
    ("table_create", {"name": "Bad Name"}, True),
    ("table_create", {"name": "cities", "columns": {"city": "str"}}, False),
    ("table_create", {"name": "towns", "columns": {"town": 5}}, True),  # a type that is no name
    ("table_create", {"name": "towns", "columns": ["town"]}, True),  # names without types
    ("table_list", {}, False),
    ("table_show", {"table": "people"}, False),
    ("table_show", {"table": "nope"}, True),
    (
        "table_add_rows",
        {"table": "people", "rows": [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]},
        False,
    ),
    ("table_add_rows", {"table": "people", "rows": [{"age": "old"}]}, True),
    ("table_update_rows", {"table": "people", "filter": "age > 40", "values": {"age": 42}}, False),
    ("table_update_rows", {"table": "people", "filter": "age >", "values": {"age": 1}}, True),
    ("table_filter", {"tables": ["people"], "filter": "age > 30"}, False),
    ("table_filter", {"tables": ["people"], "filter": "__import__('os')"}, True),
    ("table_reduce", {"table": "people", "metric": "mean", "keys": "age"}, False),
    ("table_reduce", {"table": "people", "metric": "nonsense", "keys": "age"}, True),
    ("table_search", {"query": "Ada"}, False),
    ("table_search", {"query": "Ada", "tables": ["nope"]}, True),
    ("table_join", {"left": "people", "right": "people", "on": "left.name == right.name"}, False),
    ("table_join", {"left": "people", "right": "people", "on": "nonsense"}, True),
    (
        "table_search_join",
        {"left": "people", "right": "people", "query": "Ada", "on": "left.name == right.name"},
        False,
    ),
    (
        "table_search_join",
        {"left": "nope", "right": "people", "query": "Ada", "on": "left.name == right.name"},
        True,
    ),
    ("table_column_add", {"table": "people", "column": "email", "type": "str"}, False),
    ("table_column_add", {"table": "people", "column": "Bad Column", "type": "str"}, True),
    ("table_column_derive", {"table": "people", "column": "decade", "expression": "age // 10"}, False),
    ("table_column_derive", {"table": "people", "column": "half", "expression": "age +"}, True),
    ("table_column_rename", {"table": "people", "old": "decade", "new": "age_decade"}, False),
    ("table_column_rename", {"table": "people", "old": "nope", "new": "other"}, True),
    ("table_column_transform", {"table": "people", "column": "age_decade", "type": "str"}, False),
    ("table_column_transform", {"table": "people", "column": "age_decade", "type": "nonsense"}, True),
    ("table_column_delete", {"table": "people", "column": "email"}, False),
    ("table_column_delete", {"table": "people", "column": "nope"}, True),
    ("table_column_copy", {"table": "people", "column": "name", "to_table": "cities"}, False),
    ("table_column_copy", {"table": "people", "column": "name", "to_table": "nope"}, True),
    (
        "table_column_move",
        {"table": "people", "column": "age_decade", "to_table": "cities", "lossy": "drop"},
        False,
    ),
    ("table_column_move", {"table": "people", "column": "nope", "to_table": "cities"}, True),
    ("table_column_vectorize", {"table": "people", "column": "name"}, False),
    ("table_column_vectorize", {"table": "people", "column": "nope"}, True),
    ("table_ask", {"question": "Who is Ada?", "instructions": "Answer in one line."}, False),
    ("table_ask", {"question": 5}, True),
    ("table_update", {"request": "Add the people in this", "document": "name,age\nGrace,45\n"}, False),
    ("table_update", {"request": "x", "dry_run": "perhaps"}, True),
    ("table_update", {"request": "more", "continue_run": "2026-01-01T00:00:00Z-abcdef"}, True),
    ("table_update", {"request": "x", "document": "  "}, True),
    ("table_refactor", {"request": "Call the age column years"}, False),
    ("table_refactor", {"request": 5}, True),
    ("table_rename", {"old": "cities", "new": "towns"}, False),
    ("table_rename", {"old": "nope", "new": "other"}, True),
    ("table_delete_rows", {"table": "people", "filter": "years > 100"}, False),
    ("table_delete_rows", {"table": "people", "filter": "age >>"}, True),
    ("table_delete", {"tables": ["towns"]}, False),
    ("table_delete", {"tables": ["nope"]}, True),
    ("task_new", {"goal": "Plan the offsite"}, False),
    ("task_new", {"goal": 5}, True),
    ("task_list", {}, False),
    ("task_show", {"task": "t1"}, False),
    ("task_show", {"task": "t99"}, True),
    ("task_plan", {"task": "t1", "plan": "Book the venue, then invite the team"}, False),
    ("task_plan", {"task": "t99", "plan": "x"}, True),
    ("task_status", {"task": "t1", "status": "blocked"}, False),
    ("task_status", {"task": "t1", "status": "closed"}, True),
    ("task_attach", {"task": "t1", "docs": ["body"]}, False),
    ("task_attach", {"task": "t1", "docs": ["missing-doc"]}, True),
    ("knowledge_ask", {"question": "How do I declare a request body?", "task": "t1"}, False),
    ("knowledge_ask", {"question": "How do I declare a request body?", "task": "t99"}, True),
    ("task_detach", {"task": "t1", "docs": ["body"]}, False),
    ("task_detach", {"task": "t99", "docs": ["body"]}, True),
    ("task_add_message", {"task": "t1", "text": "Book the venue", "role": "user"}, False),
    ("task_add_message", {"task": "t1", "text": "x", "role": "robot"}, True),
    ("task_context", {"task": "t1"}, False),
    ("task_context", {"task": "t99"}, True),
    ("task_consolidate", {"task": "t1", "dry_run": True}, False),
    ("task_consolidate", {"task": "t99"}, True),
    ("task_consolidate", {"task": "t1", "only": ["contacts", "summaries"], "dry_run": True}, False),
    ("task_consolidate", {"task": "t1", "only": ["contact"]}, True),
    ("task_end", {"task": "t1"}, False),
    ("task_end", {"task": "t99"}, True),
    ("memory_delete", {"name": "tea"}, False),
    ("memory_delete", {"name": "tea"}, True),
]
# No argument, nothing to refuse.
NO_REFUSAL = {"memory_list", "table_list", "task_list"}


def test_every_tool_has_a_case() -> None:
    tools = {op.tools["mcp"] for op in offered("mcp")}
    happy = {tool for tool, _, refused in CASES if not refused}
    refusals = {tool for tool, _, refused in CASES if refused}
    assert tools - happy == set()
    assert tools - refusals == NO_REFUSAL


def is_error_document(text: str) -> bool:
    """Whether text is the CLI's error document, `{"error": {"code": …, "message": …}}`."""
    try:
        document = json.loads(text)
    except ValueError:
        return False
    return isinstance(document, dict) and set(document) == {"error"} and set(document["error"]) == {
        "code",
        "message",
    }


def script_models(fake: FakeOpenAI) -> None:
    """The model's side of table_update and table_refactor, in the order they run: each asks (the
    read-only loop answers) before it changes anything."""
    fake.call_tools(("ask", {"question": "Who are the people?"}))
    fake.enqueue(content="Ada and Alan.")
    fake.call_tools(("add_rows", {"table": "people", "rows": [{"name": "Grace", "age": 45}]}))
    fake.enqueue(content="Added Grace.")
    fake.call_tools(("ask", {"question": "Which columns does people have?"}))
    fake.enqueue(content="name and age.")
    fake.call_tools(("rename_column", {"table": "people", "old": "age", "new": "years"}))
    fake.enqueue(content="Renamed age to years.")


@pytest.mark.process
def test_every_tool_answers_its_happy_path_and_refuses_with_a_readable_error(
    vault: Vault, env: dict[str, str], fake_openai: FakeOpenAI, cli
) -> None:
    from mcp import Client

    from aibuddy_cli.mcp.server import Server, mcp_app

    ok(cli("kb", "import", str(FIXTURE_DOCS / "body.md"), "--scope", "system", "--json"))
    ok(cli("kb", "publish", "body", "--json"))
    models = {
        "AIBUDDY_MODEL_TABLES": "openai/tables-test",
        "AIBUDDY_MODEL_EMBEDDING": "openai/embedding-test",
        "AIBUDDY_TIMEOUT": "30",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_API_BASE": fake_openai.url,
    }
    failures: list[str] = []

    async def main() -> None:
        async with Client(mcp_app(Server(None, None, None, Settings.read(), Path.cwd()))) as client:
            for tool, arguments, refused in CASES:
                if tool == "table_update" and not refused:
                    script_models(fake_openai)
                if tool == "table_ask" and not refused:
                    fake_openai.enqueue(content="Ada is 36.")
                result = await client.call_tool(tool, arguments)
                text = result.content[0].text if result.content else ""
                if bool(result.is_error) != refused:
                    failures.append(
                        f"{tool} {arguments}: {'refused' if result.is_error else 'answered'}: {text}"
                    )
                elif refused and not is_error_document(text):
                    failures.append(f"{tool} {arguments}: a refusal a model cannot read: {text}")
                elif not refused and result.structured_content != json.loads(text):
                    failures.append(f"{tool} {arguments}: structured content differs from the text")

    with environment({**env, **models}):
        asyncio.run(main())
    assert failures == []
    schema = json.loads((vault.root / "tables/personal/demo/people.schema.json").read_text())
    assert "years" in json.dumps(schema)  # the refactor the model asked for was applied


def wrong_kind(schema: dict[str, Any]) -> Any:
    """A value the schema does not take: a bool where a string, a number, a list or an object is
    due (pydantic took true as the number 1), a string where a bool is."""
    kinds = {option.get("type") for option in schema.get("anyOf", [schema])}
    return "yes" if "boolean" in kinds else True


def test_an_argument_of_the_wrong_kind_is_the_tool_error_document_for_every_tool(
    vault: Vault, env: dict[str, str]
) -> None:
    """Every argument of every tool, as the client sees it listed, sent of the wrong kind, and
    every required one left out, and one the tool does not have: each is refused before the tool
    runs, as the error document naming the argument, and nothing is written."""
    from mcp import Client

    from aibuddy_cli.mcp.server import Server, mcp_app

    happy = {}
    for tool, arguments, refused in CASES:
        if not refused:
            happy.setdefault(tool, arguments)
    before = sorted(str(path) for path in vault.root.rglob("*") if ".aibuddy" not in path.parts)
    failures: list[str] = []

    async def main() -> int:
        calls = 0
        async with Client(mcp_app(Server(None, None, None, Settings.read(), Path.cwd()))) as client:
            for listed in (await client.list_tools()).tools:
                schema, base = listed.input_schema, happy.get(listed.name, {})
                unknown = ({**base, "user": "bob"}, "unknown argument 'user'")
                sent: list[tuple[dict[str, Any], str]] = [unknown]
                for name, declared in schema.get("properties", {}).items():
                    wrong = wrong_kind(declared)
                    sent.append(({**base, name: wrong}, f"{name}: {wrong!r} is not of type "))
                for name in schema.get("required", []):
                    left_out = {key: value for key, value in base.items() if key != name}
                    sent.append((left_out, f"'{name}' is a required property"))
                for arguments, expected in sent:
                    calls += 1
                    result = await client.call_tool(listed.name, arguments)
                    text = result.content[0].text if result.content else ""
                    document = json.loads(text) if is_error_document(text) else None
                    if not result.is_error or document is None:
                        failures.append(f"{listed.name} {arguments}: not the error document: {text}")
                    elif document["error"]["code"] != "invalid_input" or not document["error"][
                        "message"
                    ].startswith(expected):
                        failures.append(f"{listed.name} {arguments}: {document['error']}")
        return calls

    with environment(env):
        calls = asyncio.run(main())
    assert failures == [] and calls > 100
    assert sorted(str(path) for path in vault.root.rglob("*") if ".aibuddy" not in path.parts) == before
