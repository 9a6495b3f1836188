"""Task messages, context assembly, compaction and `task end`."""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI
from helpers import BODY, STRINGS, ok

from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault


@pytest.fixture
def stocked(vault: Vault) -> Vault:
    knowledge = Session(vault, "demo", environ={}).knowledge
    knowledge.publish(*[o.doc for o in knowledge.import_paths([str(BODY), str(STRINGS)], scope="system")])
    memory = Session(vault, "demo", environ={}).memory
    memory.save(
        "report-style",
        type="feedback",
        description="Weekly reports use three sections",
        body="Done, next, risks.",
    )
    memory.save("tea", type="user", description="Drinks green tea", body="No sugar.")
    return vault


def test_messages_record_the_attachments_of_their_moment(cli, stocked: Vault) -> None:
    ok(cli("task", "new", "Write the weekly report", "--plan", "1. gather 2. write", "--json"))
    ok(cli("task", "attach", "t1", "body", "--json"))
    first = ok(cli("task", "add-message", "t1", "Draft the weekly report", "--role", "user", "--json"))
    ok(cli("task", "detach", "t1", "body", "--json"))
    ok(cli("task", "attach", "t1", "ch08-02-strings", "--json"))
    second = ok(cli("task", "add-message", "t1", "Here is a draft.", "--role", "assistant", "--json"))
    assert (first["n"], first["attached"]) == (1, ["system/body"])
    assert (second["n"], second["attached"]) == (2, ["system/ch08-02-strings"])
    log = stocked.root / "tasks" / "demo" / "t1" / "messages.jsonl"
    assert [json.loads(line)["attached"] for line in log.read_text().splitlines()] == [
        ["system/body"],
        ["system/ch08-02-strings"],
    ]
    bad = cli("task", "add-message", "t1", "x", "--role", "system", "--json")
    assert bad.exit_code == 6


def test_context_assembles_goal_messages_memories_and_documents(cli, stocked: Vault) -> None:
    ok(cli("task", "new", "Write the weekly report", "--plan", "gather, then write", "--json"))
    ok(cli("task", "attach", "t1", "body", "--json"))
    ok(
        cli(
            "task",
            "add-message",
            "t1",
            "Please draft this week's report in three sections.",
            "--role",
            "user",
            "--json",
        )
    )
    context = ok(cli("task", "context", "t1", "--json"))
    assert (context["goal"], context["plan"], context["summary"]) == (
        "Write the weekly report",
        "gather, then write",
        None,
    )
    assert [m["n"] for m in context["messages"]] == [1]
    assert [r["name"] for r in context["memories"]["records"]] == ["report-style"]
    assert context["memories"]["records"][0]["body"] == "Done, next, risks."
    assert context["documents"] == [
        {"doc": "system/body", "title": "Request Body", "scope": "system", "summary": None, "sections": 11}
    ]
    ok(
        cli(
            "task",
            "add-message",
            "t1",
            "Done. Anything else about the weekly report?",
            "--role",
            "user",
            "--json",
        )
    )
    again = ok(cli("task", "context", "t1", "--json"))
    assert again["memories"]["records"] == []
    assert again["memories"]["already_in_context"] == {
        "count": 1,
        "records": [{"name": "report-style", "since_message": 1}],
    }


def test_compaction_digests_older_messages_and_never_truncates_the_log(cli, stocked: Vault) -> None:
    config = stocked.root / "aibuddy.toml"
    config.write_text(
        config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 2400")
        + "recent_messages = 2\n"
    )
    tasks = Session(Vault.open(stocked.root), "demo").tasks
    task = tasks.new("Investigate the outage")
    for i in range(24):
        tasks.add_message(task.id, "user", f"Question {i}: " + "details " * 40)
        tasks.add_message(task.id, "tool", json.dumps({"error": "timeout"}) if i == 0 else "rows: 42\n" * 20)
    context = ok(cli("task", "context", task.id, "--json"))
    summary = context["summary"]
    assert summary["method"] == "digest"
    first, last = summary["covers"]
    assert first == 1 and last == 48 - len(context["messages"])
    assert "#1 user: Question 0: details" in summary["text"]
    assert "#2 tool result: error" in summary["text"] and "#4 tool result: ok (180 chars)" in summary["text"]
    assert [m["n"] for m in context["messages"]] == list(range(last + 1, 49))
    assert len(tasks.messages(task.id)) == 48


@pytest.mark.process
def test_compaction_through_the_compact_model_is_cached(
    vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 100"))
    vault = Vault.open(vault.root)
    tasks = Session(vault, "demo").tasks
    task = tasks.new("Long task")
    for i in range(10):
        tasks.add_message(task.id, "user" if i % 2 == 0 else "assistant", f"message {i} " + "words " * 30)
    environ = {"AIBUDDY_MODEL_COMPACT": "openai/compact-test", "AIBUDDY_TIMEOUT": "30"}
    fake_openai.enqueue(content="The user asked ten things; all were answered.")
    context = Session(vault, "demo", environ=environ).context.assemble(task.id).to_json()
    assert context["summary"]["method"] == "model"
    assert context["summary"]["text"] == "The user asked ten things; all were answered."
    compact_requests = [r for r in fake_openai.requests if r["body"]["model"] == "compact-test"]
    assert len(compact_requests) == 1 and "message 0 words" in json.dumps(compact_requests[0]["body"])
    again = Session(vault, "demo", environ=environ).context.assemble(task.id).to_json()
    assert again["summary"] == context["summary"]
    assert len([r for r in fake_openai.requests if r["body"]["model"] == "compact-test"]) == 1
    fake_openai.enqueue(status=500)
    tasks.add_message(task.id, "user", "one more " * 40)
    fallback = Session(vault, "demo", environ=environ).context
    assert fallback.assemble(task.id).to_json()["summary"]["method"] == "digest"
    assert any("digest" in w for w in fallback.warnings)


def test_task_end_closes_and_extracts(cli, stocked: Vault) -> None:
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "What's the capital of France?", "--role", "user", "--json"))
    ok(cli("task", "add-message", "t1", "Paris.", "--role", "assistant", "--json"))
    ended = ok(cli("task", "end", "t1", "--json"))
    assert ended["task"]["status"] == "closed"
    assert ended["extraction"]["cues"] == [] and ended["extraction"]["decisions"][0]["outcome"] == "no-cue"
    late = cli("task", "add-message", "t1", "more", "--role", "user", "--json")
    assert late.exit_code == 4
    assert cli("task", "end", "t1").exit_code == 4


def test_a_long_history_digest_stays_within_the_budget(stocked: Vault) -> None:
    tasks = Session(stocked, "demo").tasks
    task = tasks.new("Very long task")
    for i in range(400):
        tasks.add_message(task.id, "user", f"message number {i} " + "text " * 30)
    context = Session(Vault.open(stocked.root), "demo", environ={}).context.assemble(task.id).to_json()
    summary = context["summary"]["text"]
    assert len(summary) // 4 <= 6000 // 2 + 50
    assert summary.startswith("(messages 1-") and "more, not shown" in summary.splitlines()[0]
    assert summary.splitlines()[-1].startswith(f"#{context['summary']['covers'][1]} user: message number")


def test_damaged_task_files_are_reported_not_fatal(cli, stocked: Vault) -> None:
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "I prefer tea.", "--role", "user", "--json"))
    log = stocked.root / "tasks" / "demo" / "t1" / "messages.jsonl"
    with open(log, "ab") as handle:
        handle.write(b'{"n": 2, "role": "user", "content": null, "at": "x", "attached": []}\n\xff\xfe\n')
    context = cli("task", "context", "t1", "--json")
    assert (
        context.exit_code == 0 and "line 2 skipped" in context.stderr and "line 3 skipped" in context.stderr
    )
    assert [m["n"] for m in json.loads(context.stdout)["messages"]] == [1]
    ended = ok(cli("task", "end", "t1", "--json"))
    assert ended["task"]["status"] == "closed"
    task_file = stocked.root / "tasks" / "demo" / "t1" / "task.json"
    task_file.write_text(task_file.read_text().replace('"attached": []', '"attached": null'))
    assert cli("task", "context", "t1", "--json").exit_code == 6
