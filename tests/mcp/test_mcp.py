"""`aibuddy mcp` through the SDK's own client over stdio (a real client and a real server process):
the tools per task, each tool's answer as the CLI's --json, errors as tool errors that write
nothing, the user fixed by the server, and a server that survives failures and concurrent calls."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import FIXTURE_DOCS, environment, in_vault, ok, run_in_process, wait_for

from aibuddy_cli.operations.registry import offered as offered_to
from aibuddy_cli.operations.registry import operations
from aibuddy_cli.operations.schemas import output_schema
from aibuddy_cli.settings import Settings
from aibuddy_cli.vault import Vault

mcp = pytest.importorskip("mcp")


def run_client(
    aibuddy_exe: list[str],
    env: dict[str, str],
    body: Callable[[Any], Awaitable[Any]],
    *server_args: str,
) -> Any:
    """body with the SDK's client of `aibuddy mcp` over stdio: a real server process."""
    from mcp import Client, StdioServerParameters

    async def main() -> Any:
        command, *args = aibuddy_exe
        params = StdioServerParameters(command=command, args=[*args, "mcp", *server_args], env=env)
        async with Client(params) as client:
            return await body(client)

    return asyncio.run(main())


def run_in_memory(env: dict[str, str], body: Callable[[Any], Awaitable[Any]], task: str | None = None) -> Any:
    """body with the SDK's client of the server `aibuddy mcp --task task` serves, in this process:
    env is the whole environment meanwhile, as the server process would have it. The stdio server
    process is test_the_tools_and_their_answers' (through the SDK's client) and RawServer's."""
    from mcp import Client

    from aibuddy_cli.mcp.server import Server, mcp_app

    async def main() -> Any:
        async with Client(mcp_app(Server(None, None, task, Settings.read(), Path.cwd()))) as client:
            return await body(client)

    with environment(env):
        return asyncio.run(main())


def answer(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


@pytest.mark.process
def test_the_tools_and_their_answers(aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli) -> None:
    async def body(client: Any) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        offered = {op.tools["mcp"]: op for op in operations() if op.model and "mcp" in op.tools}
        # Every operation a model may use (knowledge_ask with the task in the call). Never a tool
        # that clears memory, undoes a table run or reads documents outside knowledge_ask.
        assert set(tools) == set(offered)
        assert tools["knowledge_ask"].input_schema["required"] == ["question", "task"]
        wanted = {"table_filter", "table_add_rows", "table_refactor", "task_add_message", "task_end"}
        assert wanted <= set(tools)
        assert not {"memory_clear", "table_undo", "kb_search", "kb_read", "read_section"} & set(tools)
        assert all("user" not in tool.input_schema.get("properties", {}) for tool in tools.values())
        # What a client shows and decides by, from the registry: a title, what each tool does to the
        # vault, and the shape of its answer.
        for name, tool in tools.items():
            op, hint = offered[name], tool.annotations
            assert tool.title == hint.title == op.title and hint.open_world_hint is False, name
            assert "--" not in tool.title + tool.description, name  # the tools' terms, not flags
            assert (hint.read_only_hint, hint.destructive_hint) == (op.read_only, op.destructive), name
            assert hint.idempotent_hint == op.idempotent, name
            published = dict(tool.output_schema)
            assert published.pop("type") == "object", name  # as the protocol requires, even of a union
            assert published == {k: v for k, v in output_schema(op).items() if k != "type"}, name
        assert tools["memory_delete"].annotations.destructive_hint is True
        assert tools["memory_save"].annotations.destructive_hint is False
        # table_update and table_refactor give their model the table_write tools, which delete
        # rows, columns and tables: they are as destructive as those.
        assert any(op.destructive for op in offered_to("table_write"))
        assert tools["table_update"].annotations.destructive_hint is True
        assert tools["table_refactor"].annotations.destructive_hint is True
        for lossy in ("table_column_transform", "table_column_derive", "table_column_move"):  # drop values
            assert tools[lossy].annotations.destructive_hint is True, lossy
        assert tools["memory_recall"].input_schema["properties"]["limit"]["minimum"] == 1
        assert "task" in tools["task_add_message"].input_schema["required"]
        assert tools["memory_recall"].input_schema["properties"]["limit"]["minimum"] == 1
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
        result = await client.call_tool("memory_recall", {"query": "green tea"})
        recalled = answer(result)
        assert [r["name"] for r in recalled["records"]] == ["tea"]
        assert result.structured_content == recalled  # the same document, for a client that validates it
        missing = error(await client.call_tool("memory_delete", {"name": "coffee"}))
        assert "coffee" in missing

    run_client(aibuddy_exe, env, body)
    assert not (vault.root / "memory/demo/x.md").exists() and not (vault.root / "x.md").exists()
    shown = ok(cli("memory", "recall", "green tea", "--json"))
    assert set(shown) == {"user", "query", "method", "records", "dropped", "warnings", "problems"}


def test_knowledge_ask_answers_from_the_task_the_call_names_or_the_servers(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli
) -> None:
    """knowledge_ask answers from the documents attached to the task its call names; a server
    started with `--task` answers from that task when a call names none (its schema says so),
    and an unknown `--task` stops the server at start."""
    ok(cli("task", "new", "Read the guide", "--json"))
    ok(cli("task", "new", "Nothing attached", "--json"))
    with pytest.raises(Exception):  # noqa: B017, PT011 - a task that does not exist: the server does not start
        run_in_memory(env, lambda client: client.list_tools(), "t9")
    ok(cli("kb", "import", str(FIXTURE_DOCS / "body.md"), "--scope", "system", "--json"))
    ok(cli("kb", "publish", "body", "--json"))
    ok(cli("task", "attach", "t1", "body", "--json"))
    question = "How do I declare a request body?"

    async def ask(client: Any) -> dict[str, Any]:
        (tool,) = [tool for tool in (await client.list_tools()).tools if tool.name == "knowledge_ask"]
        return {
            "schema": tool.input_schema,
            "description": tool.description,
            "named": answer(await client.call_tool("knowledge_ask", {"question": question, "task": "t1"})),
            "other": answer(await client.call_tool("knowledge_ask", {"question": question, "task": "t2"})),
            "unnamed": await client.call_tool("knowledge_ask", {"question": question}),
        }

    anywhere = run_in_memory(env, ask)
    assert "the task the call names" in anywhere["description"]
    assert anywhere["named"]["method"] == "extractive" and anywhere["named"]["citations"]
    assert anywhere["other"]["citations"] == []  # t2 has no documents: nothing to consult
    unnamed = json.loads(error(anywhere["unnamed"]))["error"]["message"]
    assert unnamed == "'task' is a required property"
    served = run_in_memory(env, ask, "t2")
    assert served["schema"]["required"] == ["question"]
    assert served["schema"]["properties"]["task"]["default"] == "t2"
    assert answer(served["unnamed"])["citations"] == [] and served["named"]["citations"]


@pytest.mark.process
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
        assert failed_model["method"] == "words+meaning" and failed_model["problems"][0]["name"] == "broken"
        assert any("lexical" in w for w in failed_model["warnings"])
        fake_openai.reply_json({"selected": ["note-3"]})
        chosen = answer(await client.call_tool("memory_recall", {"query": "note"}))
        assert chosen["method"] == "model" and [r["name"] for r in chosen["records"]] == ["note-3"]

    run_in_memory(model_env, body)
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

    run_in_memory(env, body)


# --- every request gets an answer a client and a model can act on -----------------------------


class RawServer:
    """`aibuddy mcp` driven over stdio line by line, as a client that may send anything: each
    reply is awaited with a generous bound (an answer that never comes fails the test, not hangs)."""

    def __init__(self, aibuddy_exe: list[str], env: dict[str, str]) -> None:
        import queue
        import subprocess
        import threading

        pipe = subprocess.PIPE
        self.process = subprocess.Popen([*aibuddy_exe, "mcp"], env=env, stdin=pipe, stdout=pipe, stderr=pipe)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.request({"method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}
        }}, 1)  # fmt: skip
        self.send_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send_line(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        import queue

        try:
            return json.loads(self.lines.get(timeout=120))
        except queue.Empty:
            raise AssertionError("the server never answered") from None

    def request(self, message: dict[str, Any], request_id: int) -> dict[str, Any]:
        self.send_line(json.dumps({"jsonrpc": "2.0", "id": request_id, **message}))
        return self.reply()

    def replies_until_exit(self) -> list[dict[str, Any]]:
        """Every reply not read yet, once the server has exited (its input closed)."""
        self.process.wait(timeout=120)
        self.reader.join(timeout=120)
        replies = []
        while not self.lines.empty():
            replies.append(json.loads(self.lines.get_nowait()))
        return replies

    def close(self) -> str:
        """The server's stderr, once it has exited on the end of its input."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)
        return self.process.stderr.read().decode("utf-8", "replace")


def tool_call(name: str, arguments: str) -> str:
    """The JSON text of a tools/call with id 7 whose arguments are the JSON text given."""
    params = f'{{"name": "{name}", "arguments": {arguments}}}'
    return f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {params}}}'


@pytest.mark.process
def test_a_line_or_an_argument_the_server_cannot_use_is_answered_and_the_next_one_works(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str]
) -> None:
    """Over stdio, a real server (one for both halves: a start costs a second and a half).

    An argument of the wrong kind: `limit: true` is no number, `description: 5` no text, each a
    tool error whose text is the error document naming the argument, and nothing is written. A
    body that looks like JSON is text as sent (the SDK's validation read "[1, 2]" as a list and
    refused it, and "null" as no body); a list sent as its JSON text where only a list is taken is
    read.

    A line the server cannot read is answered, and the next one works."""
    server = RawServer(aibuddy_exe, env)

    def call(number: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}
        reply = server.request({"method": "tools/call", "params": params}, number)
        assert reply["id"] == number, reply
        return reply["result"]

    def refusal(result: dict[str, Any]) -> dict[str, Any]:
        assert result["isError"] is True, result
        return json.loads(result["content"][0]["text"])["error"]

    try:
        # --- an argument of the wrong kind
        limit = refusal(call(2, "memory_recall", {"query": "tea", "limit": True}))
        assert limit == {"code": "invalid_input", "message": "limit: True is not of type 'integer'"}
        text = refusal(call(3, "memory_save", {"name": "tea", "type": "user", "description": 5}))
        assert text == {"code": "invalid_input", "message": "description: 5 is not of type 'string'"}
        assert not (vault.root / "memory/demo/tea.md").exists()
        for number, body in [(4, "[1, 2]"), (5, "null")]:
            save = {"name": f"json-{number}", "type": "user", "description": "JSON", "body": body}
            assert call(number, "memory_save", save)["isError"] is False
            shown = call(number + 10, "memory_show", {"name": f"json-{number}"})
            assert json.loads(shown["content"][0]["text"])["body"] == body
        assert call(6, "task_new", {"goal": "Plan the offsite"})["isError"] is False
        only = {"task": "t1", "only": '["memory"]', "dry_run": True}
        consolidated = call(7, "task_consolidate", only)
        assert consolidated["isError"] is False, consolidated
        # --- a line the server cannot read
        server.send_line("this is not JSON")
        parse_error = server.reply()
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
        # A lone surrogate (valid JSON, not valid Unicode) in a tool's argument: a tool error the
        # model can act on, for that request, naming the argument; nothing is written.
        lone = r'{"name": "tea", "type": "user", "description": "\ud800"}'
        server.send_line(tool_call("memory_save", lone))
        refused = server.reply()
        assert refused["id"] == 7 and refused["result"]["isError"] is True
        document = json.loads(refused["result"]["content"][0]["text"])["error"]
        assert document["code"] == "invalid_input" and "argument 'description'" in document["message"]
        assert not (vault.root / "memory/demo/tea.md").exists()
        # Elsewhere in a request: invalid params, to its id.
        server.send_line(r'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"x": "\udc00"}}')
        invalid = server.reply()
        assert invalid["id"] == 8 and invalid["error"]["code"] == -32602
        # A notification is never answered: the next reply is the next request's.
        server.send_line(r'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\ud800"}}')
        server.send_line(tool_call("memory_save", '{"name": "tea", "type": "user", "description": "Tea"}'))
        saved = server.reply()
        assert saved["id"] == 7 and saved["result"]["isError"] is False
        assert json.loads(saved["result"]["content"][0]["text"])["record"]["description"] == "Tea"
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr
    records = sorted(p.name for p in (vault.root / "memory/demo").glob("*.md"))
    assert records == ["json-4.md", "json-5.md", "tea.md"]


@pytest.mark.process
def test_requests_under_way_when_the_input_ends_are_all_answered(
    aibuddy_exe: list[str], vault: Vault, warm_worker: tuple[FakeOpenAI, dict[str, str]], cli
) -> None:
    """A client that writes its requests and closes its input (a script piping into `aibuddy mcp`,
    a client shutting down) gets an answer to each: also to a recall still waiting on its model
    when the input ended, and to the saves queued behind it. The server asks this pytest process's
    warm model worker (its own cold import of litellm, seconds, is not the subject)."""
    import threading

    fake_openai, settings = warm_worker
    ok(cli("memory", "save", "tea", "-t", "user", "-d", "Drinks green tea", "--json"))
    held = threading.Event()
    fake_openai.enqueue(content='{"selected": ["tea"]}', hold=held)
    models = {"AIBUDDY_MODEL_RECALL": "openai/recall-test", "AIBUDDY_TIMEOUT": "60"}
    server = RawServer(aibuddy_exe, in_vault(settings, vault.root, **models))
    recall = {"name": "memory_recall", "arguments": {"query": "tea"}}
    server.send_line(json.dumps({"jsonrpc": "2.0", "id": "recall", "method": "tools/call", "params": recall}))
    saves = range(100, 140)
    for number in saves:
        save = {"name": f"note-{number}", "type": "project", "description": f"Note {number}"}
        call = {"name": "memory_save", "arguments": save}
        server.send_line(json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": call}))
    assert server.process.stdin is not None
    server.process.stdin.close()
    try:  # the recall is under way (its model call waits) after the input ended
        assert wait_for(lambda: fake_openai.requests or server.process.poll() is not None)
    finally:
        held.set()
    replies = {reply["id"]: reply for reply in server.replies_until_exit()}
    assert set(replies) == {"recall", *saves}
    assert [reply for reply in replies.values() if "error" in reply or reply["result"]["isError"]] == []
    recalled = json.loads(replies["recall"]["result"]["content"][0]["text"])
    assert recalled["method"] == "model" and [r["name"] for r in recalled["records"]] == ["tea"]
    assert len(list((vault.root / "memory/demo").glob("note-*.md"))) == len(saves)


def test_a_tool_that_crashes_is_a_tool_error_without_a_traceback(
    vault: Vault,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """In-process, through the SDK's own client and server: a bug in a tool (here a recall made to
    raise) is an error result the model can read, with one line on the server's stderr."""
    import logging
    from pathlib import Path

    from mcp import Client

    from aibuddy_cli.mcp.server import Server, mcp_app
    from aibuddy_cli.memory.service import MemoryService

    def broken(self: MemoryService, query: str, limit: int | None = None) -> Any:
        raise KeyError("selected")

    monkeypatch.setattr(MemoryService, "recall", broken)
    app = mcp_app(Server(str(vault.root), "demo", None, Settings.read({}), Path.cwd()))

    async def body() -> tuple[Any, Any, Any]:
        async with Client(app) as client:
            crashed = await client.call_tool("memory_recall", {"query": "tea"})
            typed = await client.call_tool("memory_delete", {"name": "coffee"})
            save = {"name": "tea", "type": "user", "description": "Tea"}
            saved = await client.call_tool("memory_save", save)
            return crashed, typed, saved

    caplog.set_level(logging.DEBUG)
    crashed, typed, saved = asyncio.run(body())
    document = json.loads(error(crashed))
    assert document["error"]["code"] == "error"
    assert document["error"]["message"] == "memory_recall failed unexpectedly: KeyError: 'selected'"
    assert json.loads(error(typed))["error"]["code"] == "not_found"
    assert answer(saved)["path"] == "memory/demo/tea.md"  # the server goes on
    logged = capsys.readouterr().err
    assert logged.count("\n") == 1 and "memory_recall failed unexpectedly" in logged
    assert not [record for record in caplog.records if record.exc_info], "a traceback was logged"
    assert "Error executing tool" not in caplog.text


def test_tool_errors_speak_in_the_tools_terms(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli
) -> None:
    async def body(client: Any) -> list[str]:
        save = {"name": "tea", "type": "user", "description": "Tea"}
        answer(await client.call_tool("memory_save", save))
        task = answer(await client.call_tool("task_new", {"goal": "Plan the offsite"}))["id"]
        return [
            error(await client.call_tool("memory_save", save)),
            error(await client.call_tool("memory_update", {"name": "tea"})),
            error(await client.call_tool("memory_recall", {"query": "tea", "limit": 0})),
            error(await client.call_tool("task_status", {"task": task, "status": "closed"})),
        ]

    exists, nothing, limit, closing = [json.loads(text)["error"] for text in run_in_memory(env, body)]
    assert exists == {
        "code": "conflict",
        "message": "memory record 'tea' already exists; use the memory_update tool",
    }
    assert nothing == {"code": "usage", "message": "nothing to update: give type, description or body"}
    assert limit == {"code": "invalid_input", "message": "limit must be at least 1"}
    assert closing == {  # the tool that closes a task, not a command to run
        "code": "usage",
        "message": "a task is closed by the task_end tool, which also extracts memory",
    }
    # The command line keeps its own words.
    updated = cli("memory", "update", "tea", "--json")
    shown = json.loads(updated.stdout)["error"]["message"]
    assert shown == "nothing to update: give --type, --description or a body"
    saved = cli("memory", "save", "tea", "--type", "user", "--description", "Tea")
    assert "use 'aibuddy memory update tea'" in saved.stderr


@pytest.mark.process
def test_an_agents_own_conversation_reaches_consolidation_and_the_cue_gate(
    vault: Vault, warm_worker: tuple[FakeOpenAI, dict[str, str]]
) -> None:
    """An agent connected over MCP adds its conversation through the task tools: the message that
    completes a chunk starts the background consolidation pass, as `task add-message` does from a
    shell, and `task_end` opens the cue gate over its latest turns and extracts in the background.
    The processes they start ask this pytest process's warm model worker."""
    server, settings = warm_worker
    config = vault.root / "aibuddy.toml"
    config.write_text(re.sub(r"(?m)^every = \d+$", "every = 2", config.read_text()))
    env = in_vault(settings, vault.root, AIBUDDY_MODEL="openai/test-model", AIBUDDY_TIMEOUT="30")
    server.reply_json({"summary": {"text": "Planning an offsite for a vegetarian.", "evidence": [1]}})
    turns = [("user", "Remember that I'm vegetarian, for every event."), ("assistant", "Noted.")]

    async def talk(client: Any) -> str:
        task = answer(await client.call_tool("task_new", {"goal": "Plan the offsite"}))["id"]
        for role, text in turns:
            added = await client.call_tool("task_add_message", {"task": task, "role": role, "text": text})
            assert added.structured_content["content"] == text
        return str(task)

    task = run_in_memory(env, talk)
    mark = vault.root / "tasks" / "demo" / task / "consolidation.json"
    assert wait_for(lambda: mark.exists() and json.loads(mark.read_text())["last"] == 2)
    assert json.loads(mark.read_text())["summary"] == "Planning an offsite for a vegetarian."

    async def end(client: Any) -> Any:
        return answer(await client.call_tool("task_end", {"task": task}))

    ended = run_in_memory(env, end)
    assert ended["task"]["status"] == "closed" and ended["extraction_mode"] == "background"
    cue = [d for d in ended["extraction"]["decisions"] if d["step"] == "cue"]
    assert cue and cue[0]["outcome"] == "found"
    # The background extraction's decisions (its model's reply is no candidate list) are logged:
    # waited for here, so its model call is never a later test's.
    log = vault.root / ".aibuddy/logs/extraction.jsonl"
    assert wait_for(lambda: log.exists() and f"task {task}" in log.read_text())


def test_resources_and_prompts_show_only_the_servers_user(
    vault: Vault, env: dict[str, str], cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest, a record, a task's document map and a table's schema as resources (the last
    three as templates); another user's record is not found. The prompts assemble what they say."""
    ok(cli("memory", "save", "tea", "-t", "user", "-d", "Drinks green tea", "--body", "No sugar.", "--json"))
    monkeypatch.setenv("AIBUDDY_USER", "bob")
    ok(cli("memory", "save", "bobs-secret", "-t", "user", "-d", "Bob's own", "--body", "private", "--json"))
    monkeypatch.delenv("AIBUDDY_USER")
    ok(cli("task", "new", "Plan the offsite", "--json"))
    ok(cli("table", "create", "venues", "-c", "name:str", "-c", "city:str", "--json"))

    async def body(client: Any) -> dict[str, Any]:
        from mcp_types import TextResourceContents

        listed = {r.uri: r for r in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}

        async def read(uri: str) -> Any:
            (content,) = (await client.read_resource(uri)).contents
            assert isinstance(content, TextResourceContents) and content.mime_type == "application/json"
            return json.loads(content.text)

        found: dict[str, Any] = {
            "listed": set(listed),
            "templates": templates,
            "manifest": await read("aibuddy://memory/manifest"),
            "record": await read("aibuddy://memory/tea"),
            "map": await read("aibuddy://tasks/t1/map"),
            "schema": await read("aibuddy://tables/venues/schema"),
        }
        with pytest.raises(Exception) as refused:
            await read("aibuddy://memory/bobs-secret")
        found["refused"] = str(refused.value)
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        found["prompts"] = set(prompts)
        resumed = await client.get_prompt("resume_task", {"task": "t1"})
        found["resumed"] = resumed.messages[0].content.text
        recalled = await client.get_prompt("what_do_you_remember", {"topic": "green tea"})
        found["recalled"] = recalled.messages[0].content.text
        return found

    found = run_in_memory(env, body)
    assert found["listed"] == {"aibuddy://memory/manifest"}
    assert found["templates"] == {
        "aibuddy://memory/{name}",
        "aibuddy://tasks/{task}/map",
        "aibuddy://tables/{table}/schema",
    }
    assert "tea.md" in json.dumps(found["manifest"]) and "bobs-secret" not in json.dumps(found["manifest"])
    assert found["record"]["name"] == "tea" and found["record"]["body"] == "No sugar."
    assert found["map"]["task"] == "t1"
    assert [c["name"] for c in found["schema"]["columns"]][-2:] == ["name", "city"]
    assert "no memory record 'bobs-secret' for user demo" in found["refused"]
    assert found["prompts"] == {"resume_task", "remember_this", "what_do_you_remember"}
    assert "Plan the offsite" in found["resumed"] and "task_add_message" in found["resumed"]
    assert '"tea"' in found["recalled"]


def test_mcp_config_gives_each_client_an_absolute_command_and_merges_its_file(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """The entry a client needs, with the command by its absolute path (a bare `aibuddy` fails
    with spawn ENOENT in a desktop client whose PATH lacks it), this vault and user; --write
    merges it into the client's file, keeping the rest, and asks first (--yes without a terminal)."""
    home = tmp_path / "client-home"
    env = {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    shown = run_in_process("mcp", "--task", "t1", "config", "claude-desktop", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    entry = document["config"]["mcpServers"]["aibuddy"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    assert entry["args"][-7:] == ["--vault", str(vault.root), "--user", "demo", "mcp", "--task", "t1"]
    target = home / ".config" / "Claude" / "claude_desktop_config.json"
    assert document["path"] == str(target) and not target.exists()  # printing writes nothing
    line = run_in_process("mcp", "config", "claude-code", env=env, cwd=tmp_path)
    assert line.stdout.decode().startswith("claude mcp add aibuddy -- /")

    target.parent.mkdir(parents=True)
    target.write_text('{"mcpServers": {"other": {"command": "/bin/other"}}, "theme": "dark"}\n')
    refused = run_in_process("mcp", "config", "claude-desktop", "--write", env=env)
    assert refused.returncode == 2 and b"without --yes" in refused.stderr
    written = run_in_process("mcp", "config", "claude-desktop", "--write", "--yes", "--json", env=env)
    assert written.returncode == 0 and json.loads(written.stdout)["written"] is True
    merged = json.loads(target.read_text())
    assert merged["theme"] == "dark" and merged["mcpServers"]["other"] == {"command": "/bin/other"}
    assert merged["mcpServers"]["aibuddy"]["args"][-5:] == [*entry["args"][-7:-2]]
    target.write_text(json.dumps(merged))  # the same entry, written on one line by someone else
    again = run_in_process("mcp", "config", "claude-desktop", "--write", "--json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["written"] is False  # nothing to ask
    assert target.read_text() == json.dumps(merged)

    vscode = tmp_path / "project" / ".vscode" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text("{not json")
    broken = run_in_process("mcp", "config", "vscode", "--write", "--yes", env=env, cwd=tmp_path / "project")
    assert broken.returncode != 0 and b"is not JSON" in broken.stderr and vscode.read_text() == "{not json"
    unknown = run_in_process("mcp", "config", "emacs", env=env)
    assert unknown.returncode == 2 and b"unknown client 'emacs'" in unknown.stderr
