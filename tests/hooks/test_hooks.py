"""`aibuddy hook claude-code`: Claude Code's own sessions feed aibuddy. Events and transcripts in
the real shapes (entries with uuids and parents, thinking blocks, tool calls and results, a
sidechain, metadata lines, a line cut short), a whole session scripted end to end, and the
settings `hook install` merges and `hook uninstall` takes back out."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import in_vault, ok, run_in_process, wait_for

from aibuddy_cli.hooks.settings import installed, uninstalled
from aibuddy_cli.vault import Vault

CWD = "/home/alice/src/billing-service"


class ClaudeCodeSession:
    """A Claude Code transcript as Claude Code writes it: one JSON entry per line, appended."""

    def __init__(self, path: Path, session_id: str | None = None) -> None:
        self.path, self.session_id = path, session_id or str(uuid.uuid4())
        self.parent: str | None = None
        self.path.write_text("")

    def _entry(self, kind: str, message: dict[str, Any], **extra: Any) -> str:
        entry_id = str(uuid.uuid4())
        entry = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": "2.0.74",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": entry_id,
            "timestamp": "2026-11-30T09:00:00.000Z",
            **extra,
        }
        if not extra.get("isSidechain"):
            self.parent = entry_id
        return json.dumps(entry, ensure_ascii=False)

    def append(self, *lines: str) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))

    def user(self, text: str) -> str:
        return self._entry("user", {"role": "user", "content": text})

    def assistant(
        self, text: str, *, thinking: bool = False, tool: tuple[str, dict] | None = None
    ) -> list[str]:
        message_id = f"msg_{uuid.uuid4().hex[:12]}"
        lines = []
        if thinking:
            block = {"type": "thinking", "thinking": "Let me check.", "signature": "EqQBCkYIBxgC"}
            lines.append(
                self._entry("assistant", {"id": message_id, "role": "assistant", "content": [block]})
            )
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if tool is not None:
            content.append(
                {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:8]}", "name": tool[0], "input": tool[1]}
            )
        lines.append(self._entry("assistant", {"id": message_id, "role": "assistant", "content": content}))
        if tool is not None:
            result = {"type": "tool_result", "tool_use_id": content[-1]["id"], "content": "ok"}
            lines.append(self._entry("user", {"role": "user", "content": [result]}))
        return lines

    def sidechain(self) -> str:
        return self._entry(
            "user", {"role": "user", "content": "grep the repo"}, isSidechain=True, agentId="ab12cd34"
        )

    def event(self, name: str, **extra: Any) -> bytes:
        event = {
            "session_id": self.session_id,
            "transcript_path": str(self.path),
            "cwd": CWD,
            "permission_mode": "default",
            "hook_event_name": name,
            **extra,
        }
        return json.dumps(event).encode()


def hook(env: dict[str, str], event: bytes) -> dict[str, Any] | None:
    done = run_in_process("hook", "claude-code", env=env, input=event)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def log_lines(vault: Vault) -> list[dict[str, Any]]:
    log = vault.root / ".aibuddy/logs/hooks.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def messages(vault: Vault, task: str) -> list[dict[str, Any]]:
    path = vault.root / f"tasks/demo/{task}/messages.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.process
def test_a_session_end_to_end(
    vault: Vault, cli, tmp_path: Path, warm_worker: tuple[FakeOpenAI, dict[str, str]]
) -> None:
    """SessionStart injects a record saved earlier; 60 messages arrive through Stop events; one
    consolidation pass ran for the first 50; SessionEnd extracted the preference stated at the
    end (fake model); replaying every event changes nothing."""
    server, settings = warm_worker
    env = in_vault(settings, vault.root, AIBUDDY_MODEL="openai/test-model", AIBUDDY_TIMEOUT="30")
    description = "Billing service retries need idempotency keys"
    assert (
        cli("memory", "save", "billing-retries", "--type", "project", "--description", description).exit_code
        == 0
    )
    session = ClaudeCodeSession(tmp_path / "session.jsonl")
    events = [session.event("SessionStart", source="startup")]
    started = hook(env, events[0])
    assert started is not None
    context = started["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart" and description in context["additionalContext"]

    mark = vault.root / "tasks/demo/t1/consolidation.json"
    server.reply_json(
        {"summary": {"text": "Fixing double charges in the billing retry job.", "evidence": [1]}}
    )
    for turn in range(30):  # 60 user and assistant messages, with what Claude Code writes between
        last = turn == 29
        text = (
            "From now on always use tabs, never spaces, in this repo's Python files."
            if last
            else f"Step {turn}: look at billing/retry.py again"
        )
        lines = [session.user(text)]
        if turn % 7 == 3:
            lines.append(session.sidechain())
        lines += session.assistant(f"Done with step {turn}.", thinking=turn % 5 == 0)
        session.append(*lines)
        events.append(session.event("Stop", stop_hook_active=False))
        hook(env, events[-1])
        if turn == 24:  # message 50: the chunk is complete and the pass runs in the background
            assert wait_for(lambda: mark.exists() and json.loads(mark.read_text())["last"] == 50)
    assert len(messages(vault, "t1")) == 60
    assert json.loads(mark.read_text())["last"] == 50  # the last 10 wait for the next chunk

    server.reply_json({"candidates": [{
        "type": "feedback", "name": "tabs-not-spaces",
        "description": "Use tabs, never spaces, in the billing repo's Python files",
        "body": "Stated by the user.", "salience": 0.9, "durable": True, "recoverable": False,
    }]})  # fmt: skip
    events.append(session.event("SessionEnd", reason="prompt_input_exit"))
    hook(env, events[-1])
    record = vault.root / "memory/demo/tabs-not-spaces.md"
    assert wait_for(record.exists)
    assert "provenance: auto" in record.read_text()

    before = {
        "messages": (vault.root / "tasks/demo/t1/messages.jsonl").read_bytes(),
        "records": sorted(p.name for p in (vault.root / "memory/demo").glob("*.md")),
        "consolidated": mark.read_bytes(),
    }
    calls = len(server.requests)
    for event in events[1:]:  # a replay of every event, as a resumed or buggy host may send
        hook(env, event)
    assert (vault.root / "tasks/demo/t1/messages.jsonl").read_bytes() == before["messages"]
    assert sorted(p.name for p in (vault.root / "memory/demo").glob("*.md")) == before["records"]
    assert mark.read_bytes() == before["consolidated"] and len(server.requests) == calls
    assert all(line["outcome"] == "ok" for line in log_lines(vault))


def test_the_task_takes_only_new_turns_and_skips_what_is_not_conversation(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    fixture = Path(__file__).parents[1] / "fixtures/transcripts/claude-code.jsonl"
    transcript = tmp_path / "t.jsonl"
    whole = fixture.read_bytes()
    transcript.write_bytes(whole[: whole.index(b"\n", 9000) + 1])  # Claude Code mid-session
    event = json.dumps({
        "session_id": "7f3c2a10", "transcript_path": str(transcript), "cwd": CWD, "hook_event_name": "Stop",
    }).encode()  # fmt: skip
    hook(env, event)
    first = messages(vault, "t1")
    transcript.write_bytes(whole)  # the rest arrives, its last line cut short
    hook(env, event)
    hook(env, event)
    found = messages(vault, "t1")
    assert found[: len(first)] == first
    assert [m["role"] for m in found] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert found[0]["content"].startswith("The retry job") and "idempotency" not in json.dumps(
        [m for m in found if "Search the repo" in m["content"]]
    )
    assert not any("thinking" in json.dumps(m) or "/clear" in m["content"] for m in found)
    assert found[5]["tool_calls"][0]["function"]["name"] == "mcp__aibuddy__memory_save"
    assert len(found[2]["content"]) < 4200  # the file the agent read is cut, not kept whole
    task = json.loads((vault.root / "tasks/demo/t1/task.json").read_text())
    assert task["goal"].startswith("The retry job for failed invoices")
    binding = json.loads((vault.root / "tasks/demo/t1/hook.json").read_text())
    assert binding["offset"] < len(whole)  # the line cut short is left for a later event


def test_a_credential_in_the_transcript_never_reaches_the_task(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    session = ClaudeCodeSession(tmp_path / "s.jsonl")
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    session.append(
        session.user("Deploy it"),
        *session.assistant("Reading the env file.", tool=("Read", {"file_path": ".env"})),
    )
    lines = session.path.read_text().replace(
        '"content": "ok"', json.dumps({"content": f"OPENAI_API_KEY={key}"})[1:-1]
    )
    session.path.write_text(lines)
    hook(env, session.event("Stop"))
    stored = (vault.root / "tasks/demo/t1/messages.jsonl").read_text()
    assert key not in stored and "[redacted: api key]" in stored
    assert log_lines(vault)[-1]["redacted"] == 1  # the log says so


def test_task_import_redacts_what_the_transcript_holds_and_says_where(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """An import is an automatic write, whatever shape the transcript has: a key in a request, in
    a tool call's arguments or in a tool's output never reaches the vault (`aibuddy scan` finds
    nothing), and stderr names the messages that held one; importing again adds and says nothing."""
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    transcript = tmp_path / "chat.jsonl"
    arguments = json.dumps({"command": f"export OPENAI_API_KEY={key}"})
    transcript.write_text(
        "\n".join(
            json.dumps(line)
            for line in (
                {"role": "user", "content": "Why does the deploy fail?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": arguments}}
                ]},
                {"role": "tool", "content": "DB_URL=postgres://app:Hunter2-prod@db:5432/app"},
                {"role": "assistant", "content": f"Your key {key} has expired."},
            )
        )
        + "\n"
    )  # fmt: skip
    assert run_in_process("task", "new", "Deploy", env=env).returncode == 0
    done = run_in_process("task", "import", "t1", "--transcript", str(transcript), "--json", env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["added"] == 4, done.stderr
    assert b"credential-shaped values redacted in message(s) 2, 3, 4" in done.stderr
    stored = (vault.root / "tasks/demo/t1/messages.jsonl").read_text()
    assert key not in stored and "Hunter2-prod" not in stored and stored.count("[redacted: ") == 3
    assert run_in_process("scan", str(vault.root), env=env).returncode == 0
    again = run_in_process("task", "import", "t1", "--transcript", str(transcript), "--json", env=env)
    assert json.loads(again.stdout)["added"] == 0 and b"redacted" not in again.stderr


def test_extraction_skips_a_turn_the_agent_saved_through_aibuddys_mcp_tools(env: dict[str, str]) -> None:
    """The agent called mcp__aibuddy__memory_save in its latest exchange: that is an explicit
    memory write, and automatic extraction leaves the turn alone."""
    fixture = Path(__file__).parents[1] / "fixtures/transcripts/claude-code.jsonl"
    done = run_in_process("memory", "extract", "--transcript", str(fixture), "--dry-run", "--json", env=env)
    assert done.returncode == 0, done.stderr
    decisions = json.loads(done.stdout)["decisions"]
    assert decisions == [
        {"step": "window", "outcome": "skipped", "detail": "the assistant already wrote memory explicitly"}
    ]
    assert b"line 17 skipped" in done.stderr


def test_rows_the_agent_added_through_aibuddys_mcp_tools_stay_known_to_consolidation(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """A table_add_rows call of 120 rows is past the 4,000 characters other calls are cut at: its
    arguments are kept whole, as a memory tool's are, so consolidation's shield knows the rows
    (cut, a pass added all 120 a second time)."""
    from aibuddy_cli.tasks.consolidation.shield import Shield
    from aibuddy_cli.tasks.service import TaskMessage

    rows = [{"name": f"Vendor{i}", "city": f"Town{i}"} for i in range(120)]
    session = ClaudeCodeSession(tmp_path / "s.jsonl")
    call = ("mcp__aibuddy__table_add_rows", {"table": "vendors", "rows": rows})
    session.append(session.user("Add the vendors of the list"), *session.assistant("Adding them.", tool=call))
    hook(env, session.event("Stop"))
    (stored,) = [m for m in messages(vault, "t1") if m.get("tool_calls")]
    shield = Shield([TaskMessage(2, "assistant", "", stored["at"], [], stored["tool_calls"])])
    assert shield.handles("knowledge", {"table": "vendors", "rows": rows})


def test_an_empty_session_makes_no_task_and_the_next_start_still_recalls_the_project(
    vault: Vault, cli, env: dict[str, str], tmp_path: Path
) -> None:
    """Sessions opened and closed with nothing said (no transcript written yet, or one of
    metadata only) and a transcript_path that is no transcript make no task; a session joined
    late, with no request of the user in it, keeps a stand-in goal. None of them takes the place
    of the project's latest goal: the next SessionStart recalls what the last real session was
    about (it injected nothing)."""
    description = "Invoice retries need idempotency keys"
    assert (
        cli("memory", "save", "invoice-retries", "--type", "project", "--description", description).exit_code
        == 0
    )
    worked = ClaudeCodeSession(tmp_path / "worked.jsonl")
    worked.append(
        worked.user("Fix the invoice retry job so it uses idempotency keys"), *worked.assistant("Done.")
    )
    hook(env, worked.event("SessionEnd", reason="prompt_input_exit"))

    unwritten = ClaudeCodeSession(tmp_path / "unwritten.jsonl")
    unwritten.path.unlink()  # Claude Code writes the transcript at the first message
    for name, extra in (
        ("SessionStart", {"source": "startup"}),
        ("SessionEnd", {"reason": "prompt_input_exit"}),
    ):
        hook(env, unwritten.event(name, **extra))
    metadata = ClaudeCodeSession(tmp_path / "metadata.jsonl")
    metadata.append(json.dumps({"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}}))
    hook(env, metadata.event("Stop", stop_hook_active=False))
    hook(env, metadata.event("SessionEnd", reason="other"))
    notes = ClaudeCodeSession(tmp_path / "notes.md")
    notes.path.write_text("# Notes\n\nnot a transcript\n")
    hook(env, notes.event("SessionEnd", reason="other"))
    hook(env, notes.event("UserPromptSubmit", prompt="   "))
    assert [task["goal"] for task in ok(cli("task", "list", "--json"))["tasks"]] == [
        "Fix the invoice retry job so it uses idempotency keys"
    ]

    late = ClaudeCodeSession(tmp_path / "late.jsonl")
    late.append(*late.assistant("Picking up where the last session left off."))
    hook(env, late.event("Stop", stop_hook_active=False))
    assert ok(cli("task", "show", "t2", "--json"))["goal"] == "claude-code session in billing-service"

    started = hook(env, ClaudeCodeSession(tmp_path / "next.jsonl").event("SessionStart", source="startup"))
    assert started is not None and description in started["hookSpecificOutput"]["additionalContext"]
    assert all(line["outcome"] == "ok" for line in log_lines(vault))
    assert [
        line.get("transcript") for line in log_lines(vault) if line["session_id"] == unwritten.session_id
    ] == [
        None,  # SessionStart reads no transcript
        "not written yet",
    ]


def test_a_session_of_local_commands_only_makes_no_task(
    vault: Vault, cli, env: dict[str, str], tmp_path: Path
) -> None:
    """A session where the user ran /model and quit: Claude Code writes the command's caveat (a
    meta entry), the command and its output as user entries. They are not conversation: no task
    (its goal was "<command-name>/model</command-name> …", and the next SessionStart recalled
    with it instead of the last real session's goal)."""
    description = "Invoice retries need idempotency keys"
    saved = cli("memory", "save", "invoice-retries", "--type", "project", "--description", description)
    assert saved.exit_code == 0
    worked = ClaudeCodeSession(tmp_path / "worked.jsonl")
    worked.append(worked.user("Fix the invoice retry job"), *worked.assistant("Done."))
    hook(env, worked.event("SessionEnd", reason="prompt_input_exit"))
    commands = ClaudeCodeSession(tmp_path / "commands.jsonl")
    caveat = "<local-command-caveat>Caveat: the messages below were run locally.</local-command-caveat>"
    command = (
        "<command-name>/model</command-name>\n  <command-message>model</command-message>\n"
        "  <command-args></command-args>"
    )
    stderr = [{"type": "text", "text": "<local-command-stderr></local-command-stderr>"}]
    commands.append(
        commands._entry("user", {"role": "user", "content": caveat}, isMeta=True),
        commands.user(command),
        commands.user("<local-command-stdout>Set model to \u001b[1mopus\u001b[22m</local-command-stdout>"),
        commands._entry("user", {"role": "user", "content": stderr}),
    )
    hook(env, commands.event("SessionEnd", reason="prompt_input_exit"))
    goals = [task["goal"] for task in ok(cli("task", "list", "--json"))["tasks"]]
    assert goals == ["Fix the invoice retry job"]
    started = hook(env, ClaudeCodeSession(tmp_path / "next.jsonl").event("SessionStart", source="startup"))
    assert started is not None and description in started["hookSpecificOutput"]["additionalContext"]


def test_a_first_prompt_before_the_transcript_is_written_makes_the_task(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """Claude Code writes the transcript after the first UserPromptSubmit: the prompt makes the
    task, its goal, and the next Stop imports the turns from the transcript's start."""
    session = ClaudeCodeSession(tmp_path / "s.jsonl")
    session.path.unlink()
    request = "Why does the invoice retry job charge twice?"
    hook(env, session.event("UserPromptSubmit", prompt=request))
    session.path.write_text("")
    session.append(session.user(request), *session.assistant("It has no idempotency key."))
    hook(env, session.event("Stop", stop_hook_active=False))
    assert [m["content"] for m in messages(vault, "t1")] == [request, "It has no idempotency key."]
    assert json.loads((vault.root / "tasks/demo/t1/task.json").read_text())["goal"] == request
    assert [line["outcome"] for line in log_lines(vault)] == ["ok", "ok"]


def test_every_failure_exits_0_and_is_logged(vault: Vault, env: dict[str, str], tmp_path: Path) -> None:
    assert hook_raw(env, b"not json") == (0, b"", b"aibuddy hook: the hook event on stdin is not JSON\n")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    event = {"session_id": "s", "transcript_path": str(folder), "cwd": CWD, "hook_event_name": "Stop"}
    code, out, err = hook_raw(env, json.dumps(event).encode())
    assert (code, out, err) == (0, b"", b"")
    (failed,) = [line for line in log_lines(vault) if line["outcome"] == "failed"]
    assert "folder.jsonl is not a regular file" in failed["error"] and failed["event"] == "Stop"
    code, out, _ = hook_raw(env, json.dumps({**event, "hook_event_name": "Notification"}).encode())
    assert (code, out) == (0, b"")  # an event aibuddy has nothing to do with


def hook_raw(env: dict[str, str], event: bytes) -> tuple[int, bytes, bytes]:
    done = run_in_process("hook", "claude-code", env=env, input=event)
    return done.returncode, done.stdout, done.stderr


def test_session_start_says_nothing_when_nothing_matches(env: dict[str, str], tmp_path: Path) -> None:
    event = {
        "session_id": "s",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": "/srv/zzz",
        "hook_event_name": "SessionStart",
    }
    assert hook_raw(env, json.dumps(event).encode()) == (0, b"", b"")


# --- installing the hooks -----------------------------------------------------------------------

OTHERS = {
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def test_install_merges_the_hooks_and_uninstall_takes_out_exactly_them(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    current = json.dumps(OTHERS, indent=4)
    command = "/opt/aibuddy/bin/aibuddy --vault /v --user alice hook claude-code"
    merged = installed(path, current, command)
    document = json.loads(merged)
    assert document["permissions"] == OTHERS["permissions"]
    assert document["hooks"]["PostToolUse"] == OTHERS["hooks"]["PostToolUse"]
    assert {"hooks": [{"type": "command", "command": "notify-send done"}]} in document["hooks"]["Stop"]
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"):
        assert sum(h["command"] == command for g in document["hooks"][event] for h in g["hooks"]) == 1
    assert installed(path, merged, command) == merged  # twice is once
    moved = installed(path, merged, command.replace("/v", "/w"))
    assert "/w --user" in moved and "--vault /v " not in moved  # replaced, not added beside
    assert json.loads(uninstalled(path, moved) or "") == OTHERS
    assert uninstalled(path, current) == current and uninstalled(path, None) is None
    with pytest.raises(Exception, match="not JSON"):
        installed(path, "{oops", command)


def test_install_writes_the_settings_file_and_asks_without_a_terminal(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "claude"
    env = {**env, "CLAUDE_CONFIG_DIR": str(home)}
    refused = run_in_process("hook", "install", "claude-code", env=env)
    assert refused.returncode == 2 and b"--yes" in refused.stderr
    done = run_in_process("hook", "install", "claude-code", "--yes", "--json", env=env)
    assert done.returncode == 0, done.stderr
    written = json.loads((home / "settings.json").read_text())
    command = written["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert re.search(rf"--vault {re.escape(str(vault.root))} --user demo hook claude-code$", command)
    assert command.split()[0].startswith("/")  # an absolute path: the hook runs with Claude Code's PATH
    done = run_in_process("hook", "uninstall", "claude-code", "--yes", env=env)
    assert done.returncode == 0 and json.loads((home / "settings.json").read_text()) == {}
