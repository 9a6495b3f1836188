"""`aibuddy mcp --http`: a real server process on loopback, reached with the SDK's own client in
both protocol eras (the 2026-07-28 per-request form and the older initialize handshake), behind
bearer tokens that fix each request's user, with the Host/Origin allow-list; and many clients at
once losing no write.

One server (and its vault) serves the tests of this module that run in a pytest process: a start
costs a second and a half of imports, which ten starts paid. Each test has its users of its own on
it (alice-<n> and bob-<n>, with a token each), so what one test writes, revokes or asks never meets
another's."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from helpers import FIXTURE_DOCS, child_env, run_in_process, wait_for
from mcp_http_client import HttpServer, answer, client_session, with_client

from aibuddy_cli.operations.registry import operations
from aibuddy_cli.vault import Vault, init_vault

pytest.importorskip("mcp")


def make_tokens(env: dict[str, str], *names: str) -> dict[str, str]:
    """A token for each user named (the vault's admin, demo, makes them), by user."""
    tokens = {}
    for user in names:
        done = run_in_process("token", "create", "--user", user, env=env)
        assert done.returncode == 0, done.stderr
        tokens[user] = done.stdout.decode().strip()
    return tokens


class Served(NamedTuple):
    """The module's server, its vault and the environment of a command run on that vault as demo."""

    http: HttpServer
    vault: Vault
    env: dict[str, str]

    @property
    def url(self) -> str:
        return self.http.url


@pytest.fixture(scope="module")
def server(aibuddy_exe: list[str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`aibuddy mcp --http` on a vault of its own, for the module's tests in this pytest process; made
    in the environment isolated_env gives a test (which, per test, comes after a module's fixtures).
    Stopped at the end: it exits cleanly, logging no traceback for anything the tests sent it."""
    top = tmp_path_factory.mktemp("http")
    (top / "home").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith(("AIBUDDY_", "OPENAI_", "LITELLM_", "ANTHROPIC_")):
                patch.delenv(name)
        patch.delenv("XDG_DATA_HOME", raising=False)
        patch.setenv("HOME", str(top / "home"))
        patch.chdir(top)
        vault = init_vault(top / "vault", "demo")
        env = child_env(vault.root)
    served = Served(HttpServer(aibuddy_exe, env), vault, env)
    yield served
    log = served.http.stop()
    assert wait_for(lambda: served.http.process.poll() is not None)
    assert "Traceback" not in log, log


NUMBERS = itertools.count(1)


class Users(NamedTuple):
    """This test's own two users on the module's server, and a token for each by role."""

    alice: str
    bob: str
    tokens: dict[str, str]  # "alice" and "bob": each one's token


@pytest.fixture
def users(server: Served) -> Users:
    number = next(NUMBERS)
    alice, bob = f"alice-{number}", f"bob-{number}"
    made = make_tokens(server.env, alice, bob)
    return Users(alice, bob, {"alice": made[alice], "bob": made[bob]})


def intruders(vault: Vault) -> set[Path]:
    return set(vault.root.glob("memory/*/intruder.md"))


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
    server: Served, users: Users, mode: str
) -> None:
    async def body(client: Any) -> dict[str, Any]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        saved = answer(await client.call_tool("memory_save", {
            "name": f"tea-{mode}", "type": "user", "description": "Prefers green tea", "body": "Sencha.",
        }))  # fmt: skip
        recalled = answer(await client.call_tool("memory_recall", {"query": "green tea"}))
        return {"tools": tools, "saved": saved, "recalled": recalled}

    found = with_client(server.url, users.tokens["alice"], body, mode)
    offered = {op.tools["mcp"] for op in operations() if op.model and "mcp" in op.tools}
    assert found["tools"] == offered
    assert found["saved"]["path"] == f"memory/{users.alice}/tea-{mode}.md"
    assert [r["name"] for r in found["recalled"]["records"]] == [f"tea-{mode}"]
    assert (server.vault.root / f"memory/{users.alice}/tea-{mode}.md").is_file()


@pytest.mark.process
def test_a_token_for_bob_never_reads_alices_memory(server: Served, users: Users) -> None:
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

    with_client(server.url, users.tokens["alice"], alice)
    seen = with_client(server.url, users.tokens["bob"], bob)
    assert seen["listed"]["user"] == users.bob and seen["listed"]["records"] == []
    assert seen["recalled"]["records"] == []
    shown = seen["shown"]
    assert shown.is_error and f"no memory record 'salary' for user {users.bob}" in shown.content[0].text
    assert "salary" not in seen["manifest"].contents[0].text


@pytest.mark.process
def test_knowledge_ask_answers_from_the_tokens_users_own_tasks_only(
    server: Served, users: Users, tmp_path: Path
) -> None:
    """Over HTTP knowledge_ask takes the task in the call. alice gets an answer from the documents
    attached to her task (a system one and her personal one); bob naming her task gets what a task
    that exists nowhere gets, not found in the same words, and never her documents, not even
    through his own task of the same id."""
    note = tmp_path / "salary.md"
    note.write_text("# Salary\n\nAlice's salary review: the secret figure is 123,456.\n")
    env, alice_env = server.env, {**server.env, "AIBUDDY_USER": users.alice}
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
        attach = {"task": task, "docs": ["body", f"personal/{users.alice}/salary"]}
        answer(await client.call_tool("task_attach", attach))
        (tool,) = [tool for tool in (await client.list_tools()).tools if tool.name == "knowledge_ask"]
        asked = answer(await client.call_tool("knowledge_ask", {"question": question, "task": task}))
        return task, tool, asked

    task, tool, asked = with_client(server.url, users.tokens["alice"], alice)
    assert tool.input_schema["required"] == ["question", "task"]
    assert "the task the call names; the task is one of the user's own" in tool.description
    assert tool.title == "Answer a question from the reviewed documents attached to the task the call names"
    cited = [c["doc"] for c in asked["citations"]]
    assert f"personal/{users.alice}/salary" in cited and "123,456" in asked["answer"]

    async def bob(client: Any) -> dict[str, Any]:
        found = {
            "theirs": await client.call_tool("knowledge_ask", {"question": question, "task": task}),
            "nowhere": await client.call_tool("knowledge_ask", {"question": question, "task": "t9"}),
            "own": answer(await client.call_tool("task_new", {"goal": "Bob's own review"}))["id"],
        }
        mine = {"question": question, "task": found["own"]}
        found["mine"] = answer(await client.call_tool("knowledge_ask", mine))
        attach = {"task": found["own"], "docs": [f"personal/{users.alice}/salary"]}
        found["attach"] = await client.call_tool("task_attach", attach)
        return found

    seen = with_client(server.url, users.tokens["bob"], bob)
    theirs, nowhere = (json.loads(seen[key].content[0].text)["error"] for key in ("theirs", "nowhere"))
    assert theirs == {"code": "not_found", "message": f"no task {task!r} for user {users.bob}"}
    assert nowhere == {"code": "not_found", "message": f"no task 't9' for user {users.bob}"}
    assert seen["own"] == task and seen["mine"]["citations"] == []  # his own t1: nothing attached
    assert json.loads(seen["attach"].content[0].text)["error"]["code"] == "not_found"
    assert "123,456" not in json.dumps(seen, default=str)


@pytest.mark.process
def test_no_token_a_wrong_one_or_a_revoked_one_is_401_and_writes_nothing(
    server: Served, users: Users
) -> None:
    before = intruders(server.vault)  # another test's bob-<n> may have one
    assert post(server.url, SAVE)[0] == 401
    assert post(server.url, SAVE, authorization="Bearer aibuddy_not-a-token")[0] == 401
    assert post(server.url, SAVE, authorization=users.tokens["alice"])[0] == 401  # not a Bearer header
    assert run_in_process("token", "revoke", f"{users.alice}-1", env=server.env).returncode == 0
    status, text = post(server.url, SAVE, authorization=f"Bearer {users.tokens['alice']}")
    assert status == 401 and "invalid_token" in text
    assert intruders(server.vault) == before
    # The other token still works: a revocation is of one token.
    bob = {"authorization": f"Bearer {users.tokens['bob']}", "mcp-protocol-version": "2025-06-18"}
    status, text = post(server.url, SAVE, **bob)
    assert status == 200 and '"isError":true' not in text.replace(" ", "")
    assert intruders(server.vault) == {*before, server.vault.root / f"memory/{users.bob}/intruder.md"}


@pytest.mark.process
@pytest.mark.parametrize("era", [None, "2025-06-18", "2026-07-28"])
def test_every_request_is_answered_as_json_rpc_says(server: Served, users: Users, era: str | None) -> None:
    """A request whose id is no string or integer is an invalid request answered with id null (the
    SDK took `"id": {}` for a notification: an empty 202); a body that is no request is one too,
    in words, not pydantic's; wrong-kinded or unreadable tool arguments are the tool error
    document, as on stdio. Without a token it is still 401, and nothing is written."""
    before = intruders(server.vault)  # another test's bob-<n> may have one
    headers = {"authorization": f"Bearer {users.tokens['alice']}"}
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
    assert intruders(server.vault) == before

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
    aibuddy_exe: list[str], server: Served, users: Users
) -> None:
    """A server of its own (its allow-list is its command line's), on the module's vault."""
    served = HttpServer(
        aibuddy_exe, server.env, "--allow-host", "buddy.internal", "--allow-origin", "https://app.example"
    )
    try:
        bearer = {"authorization": f"Bearer {users.tokens['alice']}", "mcp-protocol-version": "2025-06-18"}
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
def test_many_clients_at_once_lose_no_write(server: Served, users: Users) -> None:
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

        return await client_session(server.url, users.tokens["alice"], body)

    async def main() -> list[list[Any]]:
        async def create(client: Any) -> Any:
            return await client.call_tool(
                "table_create", {"name": "load", "columns": {"client": "int", "call": "int"}}
            )

        answer(await client_session(server.url, users.tokens["alice"], create))
        return await asyncio.gather(*(one(index) for index in range(clients)))

    everything = asyncio.run(main())
    errors = [result.content[0].text for results in everything for result in results if result.is_error]
    assert errors == []
    saved = {path.stem for path in (server.vault.root / f"memory/{users.alice}").glob("n-*.md")}
    assert saved == {f"n-{i}-{c}" for i in range(clients) for c in range(calls) if c % 4 == 0}
    lines = (server.vault.root / f"tables/personal/{users.alice}/load.csv").read_text().splitlines()
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
def test_tokens_are_kept_only_as_hashes_outside_git(vault: Vault, env: dict[str, str]) -> None:
    """On a vault of its own (a git repository: not the server's)."""
    tokens = make_tokens(env, "alice", "bob")
    stored = (vault.root / ".aibuddy/tokens.json").read_text()
    assert tokens["alice"] not in stored and tokens["bob"] not in stored
    subprocess.run(["git", "init", "-q"], cwd=vault.root, check=True)
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".aibuddy/tokens.json"], cwd=vault.root, check=False
    )
    assert ignored.returncode == 0  # git ignores it: no clone or push carries it
