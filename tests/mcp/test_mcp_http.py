"""`aibuddy mcp --http`: a real server process on loopback, reached with the SDK's own client in
both protocol eras (the 2026-07-28 per-request form and the older initialize handshake), behind
bearer tokens that fix each request's user, with the Host/Origin allow-list; and many clients at
once losing no write."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXTURE_DOCS, run_in_process, wait_for
from mcp_http_client import HttpServer, answer, client_session, with_client

from aibuddy_cli.operations.registry import operations
from aibuddy_cli.vault import Vault

pytest.importorskip("mcp")


@pytest.fixture
def users(vault: Vault, env: dict[str, str]) -> dict[str, str]:
    """A token each for alice and bob (the vault's admin, demo, makes them)."""
    tokens = {}
    for user in ("alice", "bob"):
        done = run_in_process("token", "create", "--user", user, env=env)
        assert done.returncode == 0, done.stderr
        tokens[user] = done.stdout.decode().strip()
    return tokens


@pytest.fixture
def server(aibuddy_exe: list[str], env: dict[str, str], users: dict[str, str]) -> Iterator[HttpServer]:
    served = HttpServer(aibuddy_exe, env)
    yield served
    served.stop()


def post(url: str, body: Any, **headers: str) -> tuple[int, str]:
    """One raw JSON-RPC POST: its status and text (what a client that is not the SDK sees). body
    is sent as Python's JSON writes it (a lone surrogate as its \\u escape)."""
    import httpx2

    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream", **headers}
    response = httpx2.post(url, content=json.dumps(body).encode("ascii"), headers=sent, timeout=60)
    return response.status_code, response.text


SAVE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "memory_save", "arguments": {"name": "intruder", "type": "user", "description": "x"}},
}


@pytest.mark.process
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_both_protocol_eras_reach_every_tool_as_the_tokens_user(
    server: HttpServer, users: dict[str, str], vault: Vault, mode: str
) -> None:
    async def body(client: Any) -> dict[str, Any]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        saved = answer(await client.call_tool("memory_save", {
            "name": f"tea-{mode}", "type": "user", "description": "Prefers green tea", "body": "Sencha.",
        }))  # fmt: skip
        recalled = answer(await client.call_tool("memory_recall", {"query": "green tea"}))
        return {"tools": tools, "saved": saved, "recalled": recalled}

    found = with_client(server.url, users["alice"], body, mode)
    offered = {op.tools["mcp"] for op in operations() if op.model and "mcp" in op.tools}
    assert found["tools"] == offered
    assert found["saved"]["path"] == f"memory/alice/tea-{mode}.md"
    assert [r["name"] for r in found["recalled"]["records"]] == [f"tea-{mode}"]
    assert (vault.root / f"memory/alice/tea-{mode}.md").is_file()


@pytest.mark.process
def test_a_token_for_bob_never_reads_alices_memory(server: HttpServer, users: dict[str, str]) -> None:
    async def alice(client: Any) -> None:
        answer(await client.call_tool("memory_save", {
            "name": "salary", "type": "user", "description": "Alice's salary", "body": "Secret figure",
        }))  # fmt: skip

    async def bob(client: Any) -> dict[str, Any]:
        listed = answer(await client.call_tool("memory_list", {}))
        recalled = answer(await client.call_tool("memory_recall", {"query": "salary secret figure"}))
        shown = await client.call_tool("memory_show", {"name": "salary"})
        manifest = await client.read_resource("aibuddy://memory/manifest")
        return {"listed": listed, "recalled": recalled, "shown": shown, "manifest": manifest}

    with_client(server.url, users["alice"], alice)
    seen = with_client(server.url, users["bob"], bob)
    assert seen["listed"]["user"] == "bob" and seen["listed"]["records"] == []
    assert seen["recalled"]["records"] == []
    assert (
        seen["shown"].is_error and "no memory record 'salary' for user bob" in seen["shown"].content[0].text
    )
    assert "salary" not in seen["manifest"].contents[0].text


@pytest.mark.process
def test_knowledge_ask_answers_from_the_tokens_users_own_tasks_only(
    server: HttpServer, users: dict[str, str], env: dict[str, str], tmp_path: Path
) -> None:
    """Over HTTP knowledge_ask takes the task in the call. alice gets an answer from the documents
    attached to her task (a system one and her personal one); bob naming her task gets what a task
    that exists nowhere gets, not found in the same words, and never her documents, not even
    through his own task of the same id."""
    note = tmp_path / "salary.md"
    note.write_text("# Salary\n\nAlice's salary review: the secret figure is 123,456.\n")
    alice_env = {**env, "AIBUDDY_USER": "alice"}
    for args, as_user in [
        (("kb", "import", str(FIXTURE_DOCS / "body.md"), "--scope", "system"), env),
        (("kb", "publish", "body"), env),
        (("kb", "import", str(note)), alice_env),
        (("kb", "publish", "salary"), alice_env),
    ]:
        done = run_in_process(*args, env=as_user)
        assert done.returncode == 0, done.stderr
    question = "What is the secret salary figure?"

    async def alice(client: Any) -> tuple[str, Any, dict[str, Any]]:
        task = answer(await client.call_tool("task_new", {"goal": "Review salaries"}))["id"]
        attach = {"task": task, "docs": ["body", "personal/alice/salary"]}
        answer(await client.call_tool("task_attach", attach))
        (tool,) = [tool for tool in (await client.list_tools()).tools if tool.name == "knowledge_ask"]
        asked = answer(await client.call_tool("knowledge_ask", {"question": question, "task": task}))
        return task, tool, asked

    task, tool, asked = with_client(server.url, users["alice"], alice)
    assert tool.input_schema["required"] == ["question", "task"]
    assert "the task the call names; the task is one of the user's own" in tool.description
    assert tool.title == "Answer a question from the reviewed documents attached to the task the call names"
    assert "personal/alice/salary" in [c["doc"] for c in asked["citations"]] and "123,456" in asked["answer"]

    async def bob(client: Any) -> dict[str, Any]:
        found = {
            "theirs": await client.call_tool("knowledge_ask", {"question": question, "task": task}),
            "nowhere": await client.call_tool("knowledge_ask", {"question": question, "task": "t9"}),
            "own": answer(await client.call_tool("task_new", {"goal": "Bob's own review"}))["id"],
        }
        mine = {"question": question, "task": found["own"]}
        found["mine"] = answer(await client.call_tool("knowledge_ask", mine))
        attach = {"task": found["own"], "docs": ["personal/alice/salary"]}
        found["attach"] = await client.call_tool("task_attach", attach)
        return found

    seen = with_client(server.url, users["bob"], bob)
    theirs, nowhere = (json.loads(seen[key].content[0].text)["error"] for key in ("theirs", "nowhere"))
    assert theirs == {"code": "not_found", "message": f"no task {task!r} for user bob"}
    assert nowhere == {"code": "not_found", "message": "no task 't9' for user bob"}
    assert seen["own"] == task and seen["mine"]["citations"] == []  # his own t1: nothing attached
    assert json.loads(seen["attach"].content[0].text)["error"]["code"] == "not_found"
    assert "123,456" not in json.dumps(seen, default=str)


@pytest.mark.process
def test_no_token_a_wrong_one_or_a_revoked_one_is_401_and_writes_nothing(
    server: HttpServer, users: dict[str, str], vault: Vault, env: dict[str, str]
) -> None:
    assert post(server.url, SAVE)[0] == 401
    assert post(server.url, SAVE, authorization="Bearer aibuddy_not-a-token")[0] == 401
    assert post(server.url, SAVE, authorization=users["alice"])[0] == 401  # not a Bearer header
    assert run_in_process("token", "revoke", "alice-1", env=env).returncode == 0
    status, text = post(server.url, SAVE, authorization=f"Bearer {users['alice']}")
    assert status == 401 and "invalid_token" in text
    assert not list(vault.root.glob("memory/*/intruder.md"))
    # The other token still works: a revocation is of one token.
    status, text = post(
        server.url, SAVE, authorization=f"Bearer {users['bob']}", **{"mcp-protocol-version": "2025-06-18"}
    )
    assert status == 200 and '"isError":true' not in text.replace(" ", "")
    assert (vault.root / "memory/bob/intruder.md").is_file()


@pytest.mark.process
@pytest.mark.parametrize("era", [None, "2025-06-18", "2026-07-28"])
def test_every_request_is_answered_as_json_rpc_says(
    server: HttpServer, users: dict[str, str], vault: Vault, era: str | None
) -> None:
    """A request whose id is no string or integer is an invalid request answered with id null (the
    SDK took `"id": {}` for a notification: an empty 202); a body that is no request is one too,
    in words, not pydantic's; wrong-kinded or unreadable tool arguments are the tool error
    document, as on stdio. Without a token it is still 401, and nothing is written."""
    headers = {"authorization": f"Bearer {users['alice']}"}
    if era is not None:
        headers["mcp-protocol-version"] = era
    if era == "2026-07-28":  # a request of this revision carries its own envelope
        meta = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"mcp-method": "tools/call", "mcp-name": "memory_save"}
    else:
        meta = {}

    def call(request_id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments, **({"_meta": meta} if meta else {})}
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    intruder = {"name": "intruder", "type": "user", "description": "x"}
    for request_id in ({}, None, True, 1.5, [1]):
        status, text = post(server.url, call(request_id, "memory_save", intruder), **headers)
        assert status == 400, (request_id, status, text)
        assert json.loads(text) == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid Request: a request's id is a string or an integer"},
        }
    assert post(server.url, call({}, "memory_save", intruder))[0] == 401
    status, text = post(server.url, {"jsonrpc": "2.0", "id": 3}, **headers)
    assert status == 400 and json.loads(text)["error"]["code"] == -32600 and "pydantic" not in text
    status, text = post(server.url, [call(4, "memory_save", intruder)], **headers)
    assert status == 400 and json.loads(text)["id"] is None and json.loads(text)["error"]["code"] == -32600
    assert not list(vault.root.glob("memory/*/intruder.md"))

    def tool_error(arguments: dict[str, Any], name: str = "memory_recall") -> dict[str, Any]:
        status, text = post(server.url, call(5, name, arguments), **headers)
        assert status == 200, text
        result = json.loads(text)["result"]
        assert json.loads(text)["id"] == 5 and result["isError"] is True, text
        return json.loads(result["content"][0]["text"])["error"]

    if era == "2026-07-28":
        headers["mcp-name"] = "memory_recall"
    limit = tool_error({"query": "tea", "limit": True})
    assert limit == {"code": "invalid_input", "message": "limit: True is not of type 'integer'"}
    query = tool_error({"query": 5})
    assert query == {"code": "invalid_input", "message": "query: 5 is not of type 'string'"}
    assert "argument 'query' is not valid Unicode text" in tool_error({"query": "\ud800"})["message"]


@pytest.mark.process
def test_host_and_origin_are_checked_against_the_allow_list(
    aibuddy_exe: list[str], env: dict[str, str], users: dict[str, str]
) -> None:
    served = HttpServer(
        aibuddy_exe, env, "--allow-host", "buddy.internal", "--allow-origin", "https://app.example"
    )
    try:
        bearer = {"authorization": f"Bearer {users['alice']}", "mcp-protocol-version": "2025-06-18"}
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        port = served.url.rsplit(":", 1)[1].split("/")[0]
        assert post(served.url, listing, **bearer)[0] == 200
        assert post(served.url, listing, origin="http://evil.example", **bearer)[0] == 403
        assert post(served.url, listing, host=f"evil.example:{port}", **bearer)[0] == 421
        assert post(served.url, listing, host=f"buddy.internal:{port}", **bearer)[0] == 200
        assert post(served.url, listing, origin="https://app.example", **bearer)[0] == 200
        assert post(served.url, listing, origin=f"http://localhost:{port}", **bearer)[0] == 200
    finally:
        served.stop()


@pytest.mark.process
def test_many_clients_at_once_lose_no_write(server: HttpServer, users: dict[str, str], vault: Vault) -> None:
    """20 clients x 10 calls mixing recall, save, table add and filter (`make bench` runs 50 x 20
    and times them): no error, every save and row there afterwards, no row key given twice."""
    clients, calls = 20, 10

    async def one(index: int) -> list[Any]:
        async def body(client: Any) -> list[Any]:
            results = []
            for call in range(calls):
                kind = call % 4
                if kind == 0:
                    arguments = {
                        "name": f"n-{index}-{call}",
                        "type": "project",
                        "description": f"note {index}",
                    }
                    results.append(await client.call_tool("memory_save", arguments))
                elif kind == 1:
                    results.append(await client.call_tool("memory_recall", {"query": f"note {index}"}))
                elif kind == 2:
                    row = {"client": index, "call": call}
                    results.append(await client.call_tool("table_add_rows", {"table": "load", "rows": [row]}))
                else:
                    results.append(await client.call_tool("table_filter", {"tables": ["load"], "limit": 5}))
            return results

        return await client_session(server.url, users["alice"], body)

    async def main() -> list[list[Any]]:
        async def create(client: Any) -> Any:
            return await client.call_tool(
                "table_create", {"name": "load", "columns": {"client": "int", "call": "int"}}
            )

        answer(await client_session(server.url, users["alice"], create))
        return await asyncio.gather(*(one(index) for index in range(clients)))

    everything = asyncio.run(main())
    errors = [result.content[0].text for results in everything for result in results if result.is_error]
    assert errors == []
    saved = {path.stem for path in (vault.root / "memory/alice").glob("n-*.md")}
    assert saved == {f"n-{i}-{c}" for i in range(clients) for c in range(calls) if c % 4 == 0}
    lines = (vault.root / "tables/personal/alice/load.csv").read_text().splitlines()
    keys = [line.split(",")[0] for line in lines[1:]]
    assert len(keys) == len(set(keys)) == clients * len([c for c in range(calls) if c % 4 == 2])


def test_the_command_line_refuses_what_http_cannot_mean(env: dict[str, str]) -> None:
    for args, words in [
        (["mcp", "--http", "not-a-port"], "--http takes [HOST:]PORT"),
        (["--user", "bob", "mcp", "--http", "8765"], "each request's token fixes its user"),
        (["mcp", "--allow-host", "x"], "go with --http"),
    ]:
        done = run_in_process(*args, env=env)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr.decode(), done.stderr


@pytest.mark.process
def test_a_stopped_server_exits_cleanly(server: HttpServer) -> None:
    log = server.stop()
    assert wait_for(lambda: server.process.poll() is not None)
    assert "Traceback" not in log, log


@pytest.mark.process
def test_tokens_are_kept_only_as_hashes_outside_git(
    vault: Vault, env: dict[str, str], users: dict[str, str]
) -> None:
    stored = (vault.root / ".aibuddy/tokens.json").read_text()
    assert users["alice"] not in stored and users["bob"] not in stored
    subprocess.run(["git", "init", "-q"], cwd=vault.root, check=True)
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".aibuddy/tokens.json"], cwd=vault.root, check=False
    )
    assert ignored.returncode == 0  # git ignores it: no clone or push carries it
