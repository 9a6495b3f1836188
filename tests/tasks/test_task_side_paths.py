"""Side paths never block the task: extraction at `task end`, recall and the document map in
`task context`. The task's document selection applies from the next message on, and compaction
keeps the pointers (citations, memory record names) of the tool results it folds away."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import in_vault, ok, run_aibuddy, wait_for

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.models import worker
from aibuddy_cli.operations.loops.kb_ask import KnowledgeAgent
from aibuddy_cli.settings import Settings
from aibuddy_cli.tasks.context import pointers
from aibuddy_cli.tasks.service import TaskService
from aibuddy_cli.vault import Vault

DEPLOY = "# Deploy guide\n\n## Rollback\n\nTo roll back, run `deployctl rollback --to previous`.\n"
HIRING = "# Hiring guide\n\n## Interviews\n\nEvery candidate meets two engineers and one manager.\n"


@pytest.fixture
def docs(vault: Vault, tmp_path: Path) -> list[str]:
    """Two published system documents: system/deploy and system/hiring."""
    knowledge = Session(vault, "demo", environ={}).knowledge
    paths = []
    for name, text in (("deploy", DEPLOY), ("hiring", HIRING)):
        path = tmp_path / f"{name}.md"
        path.write_text(text)
        paths.append(str(path))
    refs = [o.doc for o in knowledge.import_paths(paths, scope="system")]
    knowledge.publish(*refs)
    Session(vault, "demo", environ={}).memory.save(
        "deploy-habit",
        type="feedback",
        description="Always roll back before debugging",
        body="Roll back first.",
    )
    return [str(r) for r in refs]


# --- task end ---------------------------------------------------------------------------


def test_task_end_closes_the_task_when_extraction_crashes(
    cli, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aibuddy_cli.memory import extraction

    def broken(self, messages, **kwargs):  # noqa: ANN001, ANN202
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(extraction.Extractor, "run", broken)
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "From now on, I prefer tea.", "--role", "user", "--json"))
    result = cli("task", "end", "t1", "--json")
    ended = ok(result)
    assert ended["task"]["status"] == "closed"
    assert ended["extraction"]["decisions"] == [
        {"step": "extraction", "outcome": "failed", "detail": "RuntimeError: disk on fire"}
    ]
    assert "warning: automatic extraction failed" in result.stderr and "closed all the same" in result.stderr


def test_task_end_closes_the_task_when_the_extraction_log_cannot_be_written(cli, vault: Vault) -> None:
    (vault.cache_dir / "logs").mkdir(parents=True, exist_ok=True)
    (vault.cache_dir / "logs" / "extraction.jsonl").mkdir()  # a folder where the log should be
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "From now on, I prefer tea.", "--role", "user", "--json"))
    result = cli("task", "end", "t1", "--json")
    assert ok(result)["task"]["status"] == "closed"
    assert "extraction log not written" in result.stderr


@pytest.mark.process
def test_task_end_closes_the_task_when_the_memory_folder_is_odd(
    cli, vault: Vault, model_env: dict[str, str], fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in model_env.items():
        monkeypatch.setenv(name, value)
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "From now on, I prefer green tea.", "--role", "user", "--json"))
    ok(cli("task", "add-message", "t1", "Noted.", "--role", "assistant", "--json"))
    folder = vault.root / "memory" / "demo"
    folder.rmdir() if folder.is_dir() else None
    folder.write_text("not a folder")
    fake_openai.reply_json(
        {
            "candidates": [
                {
                    "type": "user",
                    "name": "tea",
                    "description": "Prefers green tea",
                    "body": "",
                    "salience": 0.9,
                    "durable": True,
                    "recoverable": False,
                }
            ]
        }  # fmt: skip
    )
    result = cli("task", "end", "t1", "--wait", "--json")  # the model in the foreground
    assert ok(result)["task"]["status"] == "closed"
    assert "warning:" in result.stderr
    assert folder.read_text() == "not a folder"


TEA = {
    "candidates": [
        {
            "type": "user",
            "name": "tea",
            "description": "Prefers green tea",
            "body": "Green tea, no sugar.",
            "salience": 0.9,
            "durable": True,
            "recoverable": False,
        }
    ]
}


@pytest.mark.process
def test_task_end_closes_at_once_and_extracts_in_the_background(
    aibuddy_exe: list[str], vault: Vault, warm_worker: tuple[FakeOpenAI, dict[str, str]]
) -> None:
    """An extraction model that does not answer until the test lets it: `task end` has answered,
    with the task closed, before the model has; the background extraction then writes the record
    and logs it. Its model call goes to the pytest process's warm model worker (a litellm import
    in the background child would cost seconds of CPU; the worker is not the subject here)."""
    fake_openai, worker_env = warm_worker
    process_env = in_vault(
        worker_env, vault.root, AIBUDDY_MODEL_EXTRACT="openai/extract-test", AIBUDDY_TIMEOUT="120"
    )
    calls = worker.status(worker_env).calls
    tasks = Session(vault, "demo").tasks
    tasks.new("Chat")
    tasks.add_message("t1", "user", "From now on, I prefer green tea.")
    tasks.add_message("t1", "assistant", "Noted.")
    hold = threading.Event()
    fake_openai.enqueue(content=json.dumps(TEA), hold=hold)
    try:
        result = run_aibuddy(aibuddy_exe, "task", "end", "t1", "--json", env=process_env)
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        ended = json.loads(result.stdout)
        assert ended["task"]["status"] == "closed" and ended["extraction_mode"] == "background"
        assert [d["outcome"] for d in ended["extraction"]["decisions"]] == ["found", "background"]
        assert Session(vault, "demo").tasks.get("t1").status == "closed"
        assert wait_for(lambda: fake_openai.requests)  # the background process asks the model
    finally:
        hold.set()
    log = vault.cache_dir / "logs" / "extraction.jsonl"
    assert wait_for(lambda: log.exists() and "task t1" in log.read_text())
    entry = json.loads(log.read_text().splitlines()[-1])
    assert entry["source"] == "task t1" and entry["written"] == ["tea"]
    record = Session(Vault.open(vault.root), "demo", environ={}).memory.show("tea")
    assert record.body.strip() == "Green tea, no sugar."
    assert worker.status(worker_env).calls == calls + 1  # the extraction came through the worker
    # What `task end` starts is only for a closed task.
    tasks.new("Another")
    refused = run_aibuddy(aibuddy_exe, "task", "end", "t2", "--background", "--json", env=process_env)
    assert refused.returncode == 4


def test_task_end_decides_at_once_what_needs_no_model(cli, vault: Vault) -> None:
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "From now on, I prefer tea.", "--role", "user", "--json"))
    ended = ok(cli("task", "end", "t1", "--json"))  # a cue, but no model: nothing to wait for
    assert ended["extraction_mode"] == "foreground"
    assert [d["outcome"] for d in ended["extraction"]["decisions"]] == ["found", "skipped"]


# --- task context -----------------------------------------------------------------------


def _context_without_recall(vault: Vault) -> tuple[dict, list[str]]:
    tasks = Session(vault, "demo").tasks
    if not tasks.list_tasks():
        tasks.new("Roll back the deploy")
        tasks.add_message("t1", "user", "How do I roll back?")
    assembler = Session(Vault.open(vault.root), "demo", environ={}).context
    return assembler.assemble("t1").to_json(), assembler.warnings


def test_context_assembles_without_memories_when_recall_crashes(
    vault: Vault, docs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self, query, limit=None):  # noqa: ANN001, ANN202
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(MemoryService, "recall", broken)
    context, warnings = _context_without_recall(vault)
    assert context["memories"] == {
        "method": "none",
        "records": [],
        "already_in_context": {"count": 0, "records": []},
    }
    assert context["goal"] == "Roll back the deploy" and [m["n"] for m in context["messages"]] == [1]
    assert any("memories left out: recall failed" in w for w in warnings)


def test_context_assembles_when_the_memory_index_is_damaged(vault: Vault, docs: list[str]) -> None:
    index = vault.memory_index_path("demo")
    index.parent.mkdir(parents=True, exist_ok=True)
    if index.exists():
        index.unlink()
    index.mkdir()  # nothing can open or replace it: recall keeps its index in memory instead
    context, warnings = _context_without_recall(vault)
    assert context["memories"]["records"] and not any("recall failed" in w for w in warnings)
    assert index.is_dir() and not any(index.iterdir())


def test_context_assembles_when_the_memory_folder_is_odd(cli, vault: Vault) -> None:
    ok(cli("task", "new", "Roll back the deploy", "--json"))
    folder = vault.root / "memory" / "demo"
    if folder.is_dir():
        folder.rmdir()
    folder.write_text("not a folder")
    result = cli("task", "context", "t1", "--json")
    assert ok(result)["memories"]["records"] == []
    assert "warning: memories left out" in result.stderr


def test_unreadable_task_files_are_still_an_error(cli, vault: Vault) -> None:
    ok(cli("task", "new", "Roll back the deploy", "--json"))
    (vault.root / "tasks" / "demo" / "t1" / "task.json").write_text("{broken")
    assert cli("task", "context", "t1", "--json").exit_code == 6


# --- the task's document selection applies from the next message -----------------------


def test_attachments_apply_from_the_next_message(cli, vault: Vault, docs: list[str]) -> None:
    deploy, hiring = docs
    ok(cli("task", "new", "Ops work", "--json"))
    ok(cli("task", "attach", "t1", deploy, "--json"))
    # No messages yet: the live selection holds.
    assert [d["doc"] for d in ok(cli("kb", "map", "--task", "t1", "--json"))["documents"]] == [deploy]
    ok(cli("task", "add-message", "t1", "How do I roll back?", "--role", "user", "--json"))
    ok(cli("task", "attach", "t1", hiring, "--json"))
    ok(cli("task", "detach", "t1", deploy, "--json"))
    # Until the next message, the documents of message 1 are the task's documents.
    mapped = ok(cli("kb", "map", "--task", "t1", "--json"))
    assert [d["doc"] for d in mapped["documents"]] == [deploy]
    assert {"doc": hiring, "reason": "attached after message 1; used from the next message on"} in mapped[
        "unavailable"
    ]
    hits = ok(cli("kb", "search", "candidate interviews", "--task", "t1", "--json"))["hits"]
    assert hits == []
    assert [h["doc"] for h in ok(cli("kb", "search", "roll back", "--task", "t1", "--json"))["hits"]] == [
        deploy
    ]
    context = ok(cli("task", "context", "t1", "--json"))
    assert [d["doc"] for d in context["documents"]] == [deploy]
    ok(cli("task", "add-message", "t1", "And the interviews?", "--role", "user", "--json"))
    assert [d["doc"] for d in ok(cli("kb", "map", "--task", "t1", "--json"))["documents"]] == [hiring]
    hits = ok(cli("kb", "search", "candidate interviews", "--task", "t1", "--json"))["hits"]
    assert [h["doc"] for h in hits] == [hiring]
    assert ok(cli("kb", "search", "roll back", "--task", "t1", "--json"))["hits"] == []
    # History is unchanged: message 1 keeps the attachments of its moment.
    messages = Session(vault, "demo").tasks.messages("t1")
    assert [m.attached for m in messages] == [[deploy], [hiring]]


def test_kb_ask_uses_the_documents_of_the_latest_message(vault: Vault, docs: list[str]) -> None:
    deploy, hiring = docs
    tasks = Session(vault, "demo").tasks
    tasks.new("Ops work")
    tasks.set_attached("t1", {deploy: True})
    tasks.add_message("t1", "user", "How do I roll back?")
    tasks.set_attached("t1", {hiring: True, deploy: False})
    agent = KnowledgeAgent(Session(vault, "demo", environ={}).knowledge, "t1", settings=Settings.read({}))
    answer = agent.ask("How do I roll back?")
    assert [c.doc for c in answer.citations] == [deploy]


# --- compaction keeps pointers ----------------------------------------------------------


def test_pointers_of_tool_results() -> None:
    page = {"doc": "system/deploy", "anchor": "rollback", "text": "…", "children": []}
    assert pointers(json.dumps(page)).citations == ["system/deploy#rollback"]
    hits = {"hits": [{"doc": "system/deploy", "anchor": "rollback"}, {"doc": "system/hiring", "anchor": "x"}]}
    assert pointers(json.dumps(hits)).citations == ["system/deploy#rollback", "system/hiring#x"]
    outline = {"doc": "system/deploy", "title": "Deploy", "outline": [{"anchor": "rollback"}]}
    assert pointers(json.dumps(outline)).citations == ["system/deploy"]
    ask = {"method": "extractive", "answer": "[system/deploy#rollback]\nrun it", "citations": []}
    assert pointers(json.dumps(ask)).citations == ["system/deploy#rollback"]
    recall = {"method": "lexical", "records": [{"name": "tea", "body": "long body"}, {"name": "style"}]}
    assert pointers(json.dumps(recall)).memories == ["tea", "style"]
    assert pointers("plain text [system/deploy#rollback] cited").citations == ["system/deploy#rollback"]
    assert pointers("nothing here") == ([], None)


def _long_task_with_tool_results(vault: Vault) -> TaskService:
    config = vault.root / "aibuddy.toml"
    config.write_text(
        config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 1200")
        + "recent_messages = 2\n"
    )
    tasks = Session(Vault.open(vault.root), "demo").tasks
    tasks.new("Roll back the deploy")
    call = [{"function": {"name": "read_section", "arguments": "{}"}}]
    tasks.add_message("t1", "assistant", "", call)
    page = {"doc": "system/deploy", "anchor": "rollback", "text": "To roll back … " * 40}
    tasks.add_message("t1", "tool", json.dumps(page))
    tasks.add_message("t1", "assistant", "", [{"function": {"name": "memory_recall", "arguments": "{}"}}])
    recalled = {"method": "lexical", "records": [{"name": "deploy-habit", "body": "Roll back first. " * 40}]}
    tasks.add_message("t1", "tool", json.dumps(recalled))
    for i in range(12):
        tasks.add_message("t1", "user", f"Follow-up {i}: " + "more words " * 30)
    return tasks


def test_a_digest_keeps_citations_and_memory_names(vault: Vault) -> None:
    _long_task_with_tool_results(vault)
    context = Session(Vault.open(vault.root), "demo", environ={}).context.assemble("t1").to_json()
    text = context["summary"]["text"]
    assert "#2 tool result (read_section): ok" in text and "cites system/deploy#rollback" in text
    assert "#4 tool result (memory_recall): ok" in text and "1 memory record(s): deploy-habit" in text
    assert "Roll back first." not in text  # the body is not shown again


@pytest.mark.process
def test_a_model_summary_keeps_the_pointers(
    vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    _long_task_with_tool_results(vault)
    fake_openai.enqueue(content="The user is rolling back a deploy.")
    environ = {"AIBUDDY_MODEL_COMPACT": "openai/compact-test", "AIBUDDY_TIMEOUT": "30"}
    context = Session(Vault.open(vault.root), "demo", environ=environ).context.assemble("t1").to_json()
    summary = context["summary"]
    assert summary["method"] == "model"
    assert summary["text"].startswith("The user is rolling back a deploy.")
    assert "system/deploy#rollback" in summary["text"] and "deploy-habit" in summary["text"]


def _read(cli, name: str, arguments: dict, result: str) -> None:
    calls = json.dumps([{"id": "c1", "function": {"name": name, "arguments": json.dumps(arguments)}}])
    ok(cli("task", "add-message", "t1", "", "--role", "assistant", "--tool-calls", calls, "--json"))
    ok(cli("task", "add-message", "t1", result, "--role", "tool", "--json"))


def _say(cli, text: str) -> None:
    ok(cli("task", "add-message", "t1", text + " more words" * 30, "--role", "user", "--json"))


def test_a_digest_cut_at_a_small_threshold_keeps_every_pointer(cli, vault: Vault) -> None:
    """At compact_at_tokens = 100 the digest shows a line or two and names the rest by number; the
    sections those read (from a read_section call's own arguments, whatever its result: plain
    text, an error, a page, a result nested past JSON's depth) and the memory records recalled
    are listed with them, compactly and bounded (they were lost with the cut)."""
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 100"))
    ok(cli("task", "new", "Roll back the deploy", "--json"))
    _read(cli, "read_section", {"doc": "system/deploy", "anchor": "rollback"}, "# Rollback\nRun deployctl.")
    _read(cli, "mcp__aibuddy__read_section", {"doc": "system/deploy#canary"}, "Error: no such section")
    page = {"doc": "system/hiring", "anchor": "interviews", "text": "Two engineers.", "children": []}
    _read(cli, "read_section", {"doc": "system/hiring", "anchor": "interviews"}, json.dumps(page))
    _read(cli, "read_section", {"doc": "system/deploy", "anchor": "deep"}, "[" * 5000 + "]" * 5000)
    recalled = {"method": "lexical", "records": [{"name": "deploy-habit", "body": "Roll back first."}]}
    _read(cli, "memory_recall", {"query": "deploy"}, json.dumps(recalled))
    for i in range(8):
        _say(cli, f"Follow-up {i}:")
    summary = ok(cli("task", "context", "t1", "--json"))["summary"]
    assert summary["method"] == "digest"
    first = summary["text"].splitlines()[0]
    assert first.startswith("(messages 1-") and "not shown" in first
    assert first.endswith(
        "their pointers: sections read or cited: system/deploy#rollback, system/deploy#canary, "
        "system/hiring#interviews, system/deploy#deep; memory records: deploy-habit)"
    ), first

    for i in range(30):  # many more sections read: the latest 20 are listed, the others counted
        _read(cli, "read_section", {"doc": "system/guide", "anchor": f"part-{i}"}, "text")
    _read(cli, "read_section", {"doc": "system/deploy", "anchor": "rollback"}, "read again")
    for i in range(8):
        _say(cli, f"Later {i}:")
    first = ok(cli("task", "context", "t1", "--json"))["summary"]["text"].splitlines()[0]
    assert "sections read or cited: 14 earlier, then system/guide#part-11, " in first, first
    assert first.endswith("system/guide#part-29, system/deploy#rollback; memory records: deploy-habit)")
    assert "part-10," not in first and len(first) < 1000


def test_a_tool_result_nested_past_jsons_depth_is_a_digest_line_like_any_other(cli, vault: Vault) -> None:
    config = vault.root / "aibuddy.toml"
    threshold = "compact_at_tokens = 100\nrecent_messages = 1"
    config.write_text(config.read_text().replace("compact_at_tokens = 6000", threshold))
    ok(cli("task", "new", "Parse the dump", "--json"))
    _read(cli, "read_section", {"doc": "system/dump", "anchor": "format"}, "[" * 5000 + "]" * 5000)
    _say(cli, "And now?")
    text = ok(cli("task", "context", "t1", "--json"))["summary"]["text"]
    assert "#2 tool result (read_section): ok (10000 chars); cites system/dump#format" in text


@pytest.mark.process
def test_a_model_summary_keeps_the_section_a_call_read_whatever_its_result(
    vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    tasks = _long_task_with_tool_results(vault)
    read = {"doc": "system/deploy", "anchor": "canary"}
    call = [{"function": {"name": "mcp__aibuddy__read_section", "arguments": json.dumps(read)}}]
    tasks.new("Canary deploys")
    tasks.add_message("t2", "assistant", "", call)
    tasks.add_message("t2", "tool", "Canary first, then everyone. " * 20)  # plain text: no citation
    for i in range(12):
        tasks.add_message("t2", "user", f"Follow-up {i}: " + "more words " * 30)
    fake_openai.enqueue(content="The user deploys through a canary.")
    environ = {"AIBUDDY_MODEL_COMPACT": "openai/compact-test", "AIBUDDY_TIMEOUT": "30"}
    summary = Session(Vault.open(vault.root), "demo", environ=environ).context.assemble("t2").summary
    assert summary is not None and summary.method == "model"
    assert summary.text == (
        "The user deploys through a canary.\n\n"
        "Pointers in the compacted messages: sections read or cited: system/deploy#canary"
    )


def test_tool_calls_are_checked_by_the_task_service() -> None:
    from aibuddy_cli.errors import InvalidInput
    from aibuddy_cli.tasks.service import parse_tool_calls

    assert parse_tool_calls('[{"function": {"name": "memory_save"}}]') == [
        {"function": {"name": "memory_save"}}
    ]
    for bad, message in (
        ("{oops", "is not JSON"),
        ('{"a": 1}', "list of objects"),
        ("[1]", "list of objects"),
    ):
        with pytest.raises(InvalidInput, match=message):
            parse_tool_calls(bad, "--tool-calls")


def test_parallel_reads_written_as_entries_of_their_own_keep_both_sections(cli, vault: Vault) -> None:
    """Claude Code writes each tool call of one reply as an entry of its own, then each result:
    both sections read stay pointers, whatever their results (the first was lost, its result
    taken for the second call's)."""
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 100"))
    ok(cli("task", "new", "Roll back the deploy", "--json"))

    def entry(kind: str, content: object) -> str:
        message = {"role": kind, "content": content, "id": "msg_1"}
        return json.dumps({"type": kind, "uuid": str(uuid.uuid4()), "sessionId": "s1", "message": message})

    reads = [("toolu_a", "rollback"), ("toolu_b", "canary")]
    lines = [entry("user", "How do we roll back?")]
    for call_id, anchor in reads:
        read = {"doc": "system/deploy", "anchor": anchor}
        use = {"type": "tool_use", "id": call_id, "name": "read_section", "input": read}
        lines.append(entry("assistant", [use]))
    for call_id, _ in reads:
        result = {"type": "tool_result", "tool_use_id": call_id, "content": "plain text"}
        lines.append(entry("user", [result]))
    transcript = "".join(line + "\n" for line in lines)
    ok(cli("task", "import", "t1", "--transcript", "-", "--json", input=transcript))
    for i in range(8):
        _say(cli, f"Follow-up {i}:")
    first = ok(cli("task", "context", "t1", "--json"))["summary"]["text"].splitlines()[0]
    assert "sections read or cited: system/deploy#rollback, system/deploy#canary)" in first, first
