"""`aibuddy mcp` through the SDK's own client over stdio (a real client and a real server process):
the tools per task, each tool's answer as the CLI's --json, errors as tool errors that write
nothing, the user fixed by the server, and a server that survives failures and concurrent calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from conftest import FIXTURE_DOCS, ok
from fake_openai import FakeOpenAI

from aibuddy_cli.vault import Vault

mcp = pytest.importorskip("mcp")


def run_client(
    aibuddy_exe: list[str],
    env: dict[str, str],
    body: Callable[[Any], Awaitable[Any]],
    *server_args: str,
) -> Any:
    from mcp import Client, StdioServerParameters

    async def main() -> Any:
        command, *args = aibuddy_exe
        params = StdioServerParameters(command=command, args=[*args, "mcp", *server_args], env=env)
        async with Client(params) as client:
            return await body(client)

    return asyncio.run(main())


def answer(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def test_the_tools_and_their_answers(aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli) -> None:
    async def body(client: Any) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {
            "memory_save",
            "memory_update",
            "memory_delete",
            "memory_recall",
            "table_ask",
            "table_update",
        }  # no task: no knowledge_ask; and never a tool that clears memory
        assert all("user" not in tool.input_schema.get("properties", {}) for tool in tools.values())
        saved = answer(
            await client.call_tool(
                "memory_save",
                {"name": "tea", "type": "user", "description": "Drinks green tea", "body": "No sugar."},
            )
        )
        assert saved["path"] == "memory/demo/tea.md" and saved["record"]["provenance"] == "manual"
        refused = error(
            await client.call_tool("memory_save", {"name": "../x", "type": "user", "description": "x"})
        )
        assert "invalid record name '../x'" in refused
        updated = answer(
            await client.call_tool("memory_update", {"name": "tea", "description": "Green tea lover"})
        )
        assert updated["changed"] is True
        recalled = answer(await client.call_tool("memory_recall", {"query": "green tea"}))
        assert [r["name"] for r in recalled["records"]] == ["tea"]
        missing = error(await client.call_tool("memory_delete", {"name": "coffee"}))
        assert "coffee" in missing

    run_client(aibuddy_exe, env, body)
    assert not (vault.root / "memory/demo/x.md").exists() and not (vault.root / "x.md").exists()
    shown = ok(cli("memory", "recall", "green tea", "--json"))
    assert set(shown) == {"user", "query", "method", "records", "dropped", "warnings", "problems"}


def test_knowledge_ask_is_offered_only_for_a_task_with_usable_documents(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli
) -> None:
    ok(cli("task", "new", "Read the guide", "--json"))
    with pytest.raises(Exception):  # noqa: B017, PT011 - a task that does not exist: the server does not start
        run_client(aibuddy_exe, env, lambda client: client.list_tools(), "--task", "t9")

    async def names(client: Any) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    assert "knowledge_ask" not in run_client(aibuddy_exe, env, names, "--task", "t1")
    guide = FIXTURE_DOCS / "body.md"
    ok(cli("kb", "import", str(guide), "--scope", "system", "--json"))
    ok(cli("kb", "publish", "body", "--json"))
    ok(cli("task", "attach", "t1", "body", "--json"))

    async def ask(client: Any) -> Any:
        assert "knowledge_ask" in await names(client)
        return answer(
            await client.call_tool("knowledge_ask", {"question": "How do I declare a request body?"})
        )

    result = run_client(aibuddy_exe, env, ask, "--task", "t1")
    assert result["method"] == "extractive" and result["citations"]


def test_the_server_survives_failures_and_concurrent_calls(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    (vault.root / "memory/demo").mkdir(parents=True, exist_ok=True)
    (vault.root / "memory/demo/broken.md").write_text("---\nnot: [closed\n---\n")
    model_env = {
        **env,
        "AIBUDDY_MODEL_RECALL": "openai/recall-test",
        "AIBUDDY_TIMEOUT": "30",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_API_BASE": fake_openai.url,
    }
    fake_openai.enqueue(status=500)

    async def body(client: Any) -> None:
        saves = [
            client.call_tool(
                "memory_save", {"name": f"note-{i}", "type": "project", "description": f"Note {i}"}
            )
            for i in range(6)
        ]
        results = await asyncio.gather(*saves)
        assert all(not result.is_error for result in results)
        failed_model = answer(await client.call_tool("memory_recall", {"query": "note"}))
        assert failed_model["method"] == "lexical" and failed_model["problems"][0]["name"] == "broken"
        assert any("lexical" in w for w in failed_model["warnings"])
        fake_openai.reply_json({"selected": ["note-3"]})
        chosen = answer(await client.call_tool("memory_recall", {"query": "note"}))
        assert chosen["method"] == "model" and [r["name"] for r in chosen["records"]] == ["note-3"]

    run_client(aibuddy_exe, model_env, body)
    assert sorted(p.name for p in (vault.root / "memory/demo").glob("note-*.md")) == [
        f"note-{i}.md" for i in range(6)
    ]


def test_tables_through_the_server(aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli) -> None:
    ok(cli("table", "create", "vendors", "--json"))
    ok(cli("table", "add", "vendors", "--row", '{"name": "Acme", "city": "Berlin"}', "--json"))

    async def body(client: Any) -> None:
        found = answer(await client.call_tool("table_ask", {"question": "Acme"}))
        assert found["method"] == "lexical" and found["hits"][0]["row"]["name"] == "Acme"
        assert "model" in error(await client.call_tool("table_update", {"request": "Acme moved to Paris"}))

    run_client(aibuddy_exe, env, body)
