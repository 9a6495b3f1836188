"""Consolidation: a pass over each chunk of a task's messages. Evidence checks, the shield,
category flags, dry runs, the watermark across failures, a chunk that arrives while a pass runs:
in process, the model scripted through the Consolidator's `complete` seam. The background start
that add-message never waits for, a killed pass and cancel: in real processes, through one model
worker and one fake OpenAI server for the pytest process (litellm is imported once, in the worker)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from consolidation_support import MODEL, REPLY, ScriptedModel, consolidator, every, log, watermark
from fake_openai import FakeOpenAI
from helpers import in_vault, ok, run_aibuddy, wait_for

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import ModelError
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.models import worker
from aibuddy_cli.tasks.consolidation.evidence import stated_part
from aibuddy_cli.tasks.consolidation.process import PassControl
from aibuddy_cli.tasks.consolidation.reply import (
    Cited,
    ContactItem,
    KnowledgeItem,
    Rejected,
    Reply,
    SummaryItem,
    TaskItem,
)
from aibuddy_cli.vault import Vault


def running(vault: Vault, task: str = "t1") -> bool:
    """Whether a pass of the task holds its lock now (asked from here, not by a process)."""
    return PassControl(Session(vault, "demo").tasks).running(task)


# --- in process: the model through the seam ------------------------------------------------------


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def consolidate(vault: Vault, model: ScriptedModel) -> Callable[..., dict]:
    """`task consolidate t1 --json` in process, with the scripted model: the same document.
    environ: more variables (AIBUDDY_CONSOLIDATE_<CATEGORY>) beside the consolidate model."""

    def run(*, environ: dict[str, str] | None = None, **options: Any) -> dict:
        with Session.locate(str(vault.root), "demo", environ={**MODEL, **(environ or {})}) as session:
            result = consolidator(session, model).run("t1", **options)
        return json.loads(json.dumps(to_json(result)))

    return run


@pytest.fixture
def chat(cli, vault: Vault) -> str:
    """A task of four messages; the assistant saved one record and deleted another itself."""
    every(vault, 4)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    calls = [
        {"function": {"name": "memory_save", "arguments": json.dumps({"name": "offsite-budget"})}},
        {"function": {"name": "memory_delete", "arguments": json.dumps({"name": "old-venue"})}},
    ]
    for role, text, extra in (
        ("user", "I'm vegetarian, remember that for every event.", []),
        ("assistant", "Noted.", ["--tool-calls", json.dumps(calls)]),
        ("user", "Maria Lopez handles the venue; she prefers email.", []),
        ("assistant", "I'll email Maria.", []),
    ):
        ok(cli("task", "add-message", "t1", text, "--role", role, *extra, "--json"))
    return "t1"


def test_without_a_model_nothing_is_consolidated_and_it_says_why(cli, vault: Vault, chat: str) -> None:
    result = ok(cli("task", "consolidate", "t1", "--json"))
    assert result["passes"] == [] and "no model for the consolidate role" in result["reason"]
    assert watermark(vault) is None and result["status"]["pending"] == 4


def test_a_pass_checks_evidence_shields_and_keeps_its_watermark(
    cli, vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    model.reply_json(REPLY)
    result = consolidate()
    (done,) = result["passes"]
    assert done["chunk"] == [1, 4] and done["applied"] is True
    outcomes = {(d["step"], d.get("name"), d["outcome"]) for d in done["decisions"]}
    assert ("memory", "diet", "created") in outcomes
    assert ("memory", "offsite-budget", "handled") in outcomes
    assert ("memory", "old-venue", "dropped") in outcomes
    assert ("contacts", "Maria Lopez", "created") in outcomes  # contacts are on by default
    dropped = [d["detail"] for d in done["decisions"] if d["outcome"] == "dropped" and d.get("name") is None]
    assert any("outside the chunk: message(s) 9" in d for d in dropped) and any(
        "no evidence" in d for d in dropped
    )
    record = ok(cli("memory", "show", "diet", "--json"))
    assert record["provenance"] == "auto"
    assert not (vault.root / "memory/demo/shoe-size.md").exists()
    mark = watermark(vault)
    assert mark["last"] == 4 and mark["summary"].startswith("Planning an offsite")
    context = ok(cli("task", "context", "t1", "--json"))
    assert context["consolidation"] == {"through": 4, "summary": mark["summary"]}
    shown = ok(cli("task", "show", "t1", "--json"))["consolidation"]
    assert shown == {"through": 4, "pending": 0, "running": False, "summary": mark["summary"], "ahead": {}}
    assert log(vault)[-1]["applied"] is True
    # The request: the chunk with its numbers and tool calls, asking for the enabled categories only.
    system, user = (message["content"] for message in model.requests[0])
    assert '"memory": [' in system and '"summary": {' in system and '"contacts": [' in system
    assert all(f'"{field}": ' in system for field in ("bio", "response_policy", "summary"))
    assert user.splitlines()[1] == "#2 assistant: Noted. [tool calls: memory_save, memory_delete]"
    # Nothing pending: a second run makes no request.
    before = len(model.requests)
    assert consolidate()["passes"] == []
    assert len(model.requests) == before


def test_an_item_its_cited_messages_do_not_state_is_dropped(
    vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    """The issue's example: a password "citing" message 1, which says nothing of a password."""
    model.reply_json(
        {
            "memory": [
                {
                    "type": "user",
                    "name": "password",
                    "description": "The user's password is hunter2",
                    "body": "hunter2",
                    "evidence": [1],
                },
                {
                    "type": "user",
                    "name": "diet",
                    "description": "The user is vegetarian at every event",
                    "body": "Vegetarian.",
                    "evidence": [1],
                },
                {
                    "type": "user",
                    "name": "venue-budget",
                    "description": "Venue budget is 5000 euros",
                    "body": "5000",
                    "evidence": [3],  # message 3 names the venue, not a budget
                },
            ]
        }
    )
    decisions = consolidate()["passes"][0]["decisions"]
    outcomes = {(d["step"], d.get("name"), d["outcome"]) for d in decisions}
    assert {("memory", "password", "dropped"), ("memory", "diet", "created")} <= outcomes
    assert ("memory", "venue-budget", "dropped") in outcomes
    dropped = next(d for d in decisions if d.get("name") == "password")
    assert dropped["detail"].startswith("the cited message(s) 1 do not state it")
    assert not (vault.root / "memory/demo/password.md").exists()
    assert (vault.root / "memory/demo/diet.md").exists()
    assert "hunter2" not in (vault.root / ".aibuddy/logs/consolidation.jsonl").read_text()


def test_two_values_in_one_pass_are_two_records(cli, vault: Vault, model: ScriptedModel, consolidate) -> None:
    every(vault, 2)
    ok(cli("task", "new", "Reports", "--json"))
    for text in ("Team A's weekly report is due on Friday.", "Team B's weekly report is now due on Monday."):
        ok(cli("task", "add-message", "t1", text, "--role", "user", "--json"))
    items = [
        {"type": "project", "name": "due", "description": description, "body": "", "evidence": [n]}
        for n, description in ((1, "Weekly report due on Friday"), (2, "Weekly report is now due on Monday"))
    ]
    model.reply_json({"memory": items})
    decisions = consolidate()["passes"][0]["decisions"]
    assert [(d["outcome"], d.get("name")) for d in decisions if d["step"] == "memory"] == [
        ("created", "due"),
        ("created", "due-2"),
    ]


def test_a_contact_must_be_named_by_its_messages_and_its_bio_stated(
    cli, vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    model.reply_json(
        {
            "contacts": [
                {"name": "John Smith", "bio": "Handles the venue", "evidence": [3]},
                {"name": "Maria Lopez", "bio": "Former chief financial officer", "evidence": [3]},
            ]
        }
    )
    decisions = consolidate(environ={"AIBUDDY_CONSOLIDATE_CONTACTS": "1"})["passes"][0]["decisions"]
    outcomes = [(d.get("name"), d["outcome"], d["detail"]) for d in decisions if d["step"] == "contacts"]
    assert outcomes == [
        ("John Smith", "dropped", "the cited message(s) 3 do not state it: the name is not in them"),
        ("Maria Lopez", "dropped", "bio: the cited message(s) 3 do not state it"),
        ("Maria Lopez", "created", "new contact"),
    ]
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    empty = dict.fromkeys(("bio", "response_policy", "summary"))
    assert rows == [{"row_id": 1, "name": "Maria Lopez", **empty}]


def test_knowledge_rows_are_kept_as_far_as_their_messages_state_them() -> None:
    texts = {1: "Hall A and Villa B in Lisbon are options.", 2: "Noted."}
    rows = [{"name": "Villa B", "city": "Lisbon"}, {"name": "Castle C", "city": "Porto"}]

    def cited(n: int) -> Cited:
        return Cited.from_reply({"table": "venues", "rows": rows, "evidence": [n]}, set(texts))

    fields, notes = stated_part("knowledge", cited(1), texts)
    assert fields["rows"] == rows[:1]
    assert [(n.outcome, n.detail) for n in notes] == [
        ("dropped", "1 row(s): the cited message(s) 1 do not state it")
    ]
    with pytest.raises(Rejected) as rejected:
        stated_part("knowledge", cited(2), texts)
    assert rejected.value.detail == "the cited message(s) 2 do not state it: none of its 2 row(s)"
    assert rejected.value.name == "venues"


def test_a_reply_is_read_into_typed_items_and_a_bad_one_is_refused_with_one_reason() -> None:
    reply = Reply.from_reply('Here it is:\n```json\n{"memory": [1, {"name": "a"}], "tasks": [], "x": 1}\n```')
    assert reply.answered == "memory, tasks, x" and reply.items("memory") == [{"name": "a"}]
    assert reply.items("tasks") == [] and not reply.gave("summaries") and reply.summary is None
    with pytest.raises(ModelError, match="holds no JSON object"):
        Reply.from_reply("no JSON here")
    refused = {
        "not an object": lambda: Cited.from_reply("a summary", {1}),
        "no evidence: an item must name the messages it rests on": lambda: Cited.from_reply({}, {1}),
        "evidence must be message numbers": lambda: Cited.from_reply({"evidence": [True]}, {1}),
        "evidence outside the chunk: message(s) 2, 3": lambda: Cited.from_reply({"evidence": [3, 1, 2]}, {1}),
        "not valid text: a lone surrogate in a string": lambda: Cited.from_reply({"a": ["\ud800"]}, {1}),
        "a contact needs a name": lambda: ContactItem.from_reply({"name": "x" * 201}),
        "the name looks like a credential": lambda: ContactItem.from_reply({"name": "sk-" + "a1" * 20}),
        "a knowledge item needs a table and rows": lambda: KnowledgeItem.from_reply({"rows": [{}]}),
        "neither a plan nor a status": lambda: TaskItem.from_reply({"plan": " ", "status": "closed"}),
    }
    for reason, read in refused.items():
        with pytest.raises(Rejected) as rejected:
            read()
        assert rejected.value.detail == reason
    contact = {"name": " Maria\n Lopez ", "bio": "  ", "response_policy": " Email  only", "summary": "Met\tX"}
    assert ContactItem.from_reply(contact) == ("Maria Lopez", None, "Email only", "Met X")
    assert TaskItem.from_reply({"plan": " Compare ", "status": "blocked"}) == ("Compare", "blocked")
    assert TaskItem.from_reply({"plan": "Compare", "status": "closed"}) == ("Compare", None)  # task end's
    assert SummaryItem.from_reply({"text": " "}).text is None


def test_a_dry_run_writes_nothing(vault: Vault, chat: str, model: ScriptedModel, consolidate) -> None:
    model.reply_json(REPLY)
    result = consolidate(dry_run=True)
    outcomes = {(d["step"], d.get("name"), d["outcome"]) for d in result["passes"][0]["decisions"]}
    assert ("memory", "diet", "would-create") in outcomes
    assert watermark(vault) is None and not (vault.root / "memory/demo/diet.md").exists() and log(vault) == []


def test_a_failed_pass_leaves_the_watermark_and_is_retried(
    vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    model.replies.append(ModelError("consolidate model failed (InternalServerError): scripted failure"))
    model.replies.append("I could not find anything to consolidate.")  # a reply that is not JSON
    for detail in ("consolidate model failed (InternalServerError): scripted failure",
                   "the model reply holds no JSON object"):  # fmt: skip
        failed = consolidate()
        assert failed["passes"][0]["applied"] is False and watermark(vault) is None
        assert failed["passes"][0]["decisions"] == [{"step": "model", "outcome": "failed", "detail": detail}]
        assert log(vault)[-1]["applied"] is False
    model.reply_json({"summary": {"text": "Offsite planning.", "evidence": [4]}})
    assert consolidate()["passes"][0]["applied"] is True
    assert watermark(vault)["last"] == 4


def test_contacts_are_a_table_merged_by_name(
    cli, vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    flags = {"AIBUDDY_CONSOLIDATE_CONTACTS": "1", "AIBUDDY_CONSOLIDATE_MEMORY": "0"}
    model.reply_json(REPLY)
    decisions = consolidate(environ=flags)["passes"][0]["decisions"]
    assert {"step": "memory", "outcome": "ignored", "detail": "category switched off"} in decisions
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    maria = {"row_id": 1, "name": "Maria Lopez", "bio": "Handles the venue", "response_policy": None}
    maria["summary"] = None
    assert rows == [maria]
    journal = (vault.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()
    assert [json.loads(line)["source"] for line in journal] == ["consolidation", "consolidation"]
    for text in ("more 0", "Email only for Maria Lopez.", "more 2", "more 3"):
        ok(cli("task", "add-message", "t1", text, "--role", "user", "--json"))
    model.reply_json(
        {"contacts": [{"name": "Maria Lopez", "response_policy": "Email only", "evidence": [6]}]}
    )
    second = consolidate(environ=flags)
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    assert rows == [{**maria, "response_policy": "Email only"}], second  # a failure shows its decisions


def test_a_pass_journals_its_changes_without_changing_the_table_services_state(
    vault: Vault, chat: str, model: ScriptedModel
) -> None:
    """The pass's tables are derived from the service's: a change through the service itself,
    during or after the pass, is journaled as the service's own (source "cli")."""
    model.reply_json(REPLY)
    environ = {**MODEL, "AIBUDDY_CONSOLIDATE_CONTACTS": "1"}
    with Session.locate(str(vault.root), "demo", environ=environ) as session:
        consolidator(session, model).run("t1")
        assert session.tables.state.source == "cli" and session.tables.state.run is None
        session.tables.changes.add_rows("contacts", [{"name": "Ana"}])
    journal = (vault.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()
    assert [json.loads(line)["source"] for line in journal] == ["consolidation", "consolidation", "cli"]


@pytest.mark.parametrize("tool", ["add_rows", "mcp__aibuddy__table_add_rows"])
def test_knowledge_rows_and_the_task_plan(
    cli, vault: Vault, model: ScriptedModel, consolidate, tool: str
) -> None:
    """The chunk's own call added Hall A (by the table loops' name, or the MCP server's as Claude
    Code's transcript gives it): the pass does not add it a second time."""
    every(vault, 2)
    ok(cli("table", "create", "venues", "-c", "name:str", "-c", "city:str", "--json"))
    ok(cli("task", "new", "Offsite", "--json"))
    done = [{"function": {"name": tool, "arguments": {"table": "venues", "rows": [{"name": "Hall A"}]}}}]
    options = "Hall A and Villa B in Lisbon are options."
    ok(cli("task", "add-message", "t1", options, "--role", "user", "--json"))
    added = ["task", "add-message", "t1", "Added Hall A.", "--role", "assistant"]
    ok(cli(*added, "--tool-calls", json.dumps(done), "--json"))
    model.reply_json(
        {
            "knowledge": [
                {"table": "venues", "rows": [{"name": "Hall A"}], "evidence": [2]},
                {"table": "venues", "rows": [{"name": "Villa B", "city": "Lisbon"}], "evidence": [1]},
            ],
            "tasks": {"plan": "Compare Hall A and Villa B", "evidence": [1]},
        }
    )
    flags = {"AIBUDDY_CONSOLIDATE_KNOWLEDGE": "1", "AIBUDDY_CONSOLIDATE_TASKS": "1"}
    done = consolidate(environ=flags)
    assert done["passes"], done  # a failure says why no pass ran (its reason)
    decisions = done["passes"][0]["decisions"]
    assert [d["outcome"] for d in decisions if d["step"] == "knowledge"] == ["handled", "added"]
    assert "(facts for these tables: venues)" in model.requests[0][0]["content"]
    names = [r["name"] for r in ok(cli("table", "filter", "venues", "--json"))["tables"][0]["rows"]]
    assert names == ["Villa B"]  # Hall A was the chunk's own add_rows, which this test never ran
    assert ok(cli("task", "show", "t1", "--json"))["plan"] == "Compare Hall A and Villa B"


def test_each_chunk_of_one_run_rolls_the_summary_the_chunk_before_wrote(
    vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    every(vault, 2)
    model.reply_json({"summary": {"text": "First half.", "evidence": [1]}})
    model.reply_json({"summary": {"text": "Both halves.", "evidence": [3]}})
    passes = consolidate()["passes"]
    assert [p["chunk"] for p in passes] == [[1, 2], [3, 4]]
    second = model.requests[-1][1]["content"]
    assert second.startswith("Previous summary: First half.")
    assert watermark(vault)["summary"] == "Both halves."


def test_an_item_that_cannot_be_written_is_dropped_and_logged_and_the_rest_applied(
    vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    """A contact named by a lone surrogate cannot be stored: that item is dropped and logged;
    the chunk's other items and its watermark are written, so the chunk is not retried forever."""
    reply = json.loads(json.dumps(REPLY))
    reply["contacts"].insert(0, {"name": "Maria \ud800 Lopez", "bio": "Handles the venue", "evidence": [3]})
    reply["memory"].append(
        {"type": "user", "name": "diet-\ud800", "description": "Veg \ud800", "body": "x", "evidence": [1]}
    )
    model.reply_json(reply)  # JSON escapes the surrogates, as a server's reply would
    done = consolidate(environ={"AIBUDDY_CONSOLIDATE_CONTACTS": "1"})["passes"][0]
    assert done["applied"] is True
    outcomes = [(d["step"], d.get("name"), d["outcome"]) for d in done["decisions"]]
    assert ("memory", "diet", "created") in outcomes and ("contacts", "Maria Lopez", "created") in outcomes
    dropped = [d for d in done["decisions"] if d["outcome"] == "dropped" and "not valid text" in d["detail"]]
    named = [("memory", "diet-\ufffd"), ("contacts", "Maria \ufffd Lopez")]  # U+FFFD for the surrogate
    assert [(d["step"], d["name"]) for d in dropped] == named
    assert watermark(vault)["last"] == 4
    entry = log(vault)[-1]
    logged = [(d["step"], d.get("name")) for d in entry["decisions"] if "not valid text" in d["detail"]]
    assert entry["applied"] is True and logged == named
    assert consolidate(environ={"AIBUDDY_CONSOLIDATE_CONTACTS": "1"})["passes"] == []  # nothing left to retry


def test_a_lower_every_after_a_pass_redoes_nothing(
    vault: Vault, chat: str, model: ScriptedModel, consolidate
) -> None:
    """The watermark keeps its chunk's first message: its check of the log does not depend on
    `every`, so changing it never sends the whole task to the model again."""
    model.reply_json({"summary": {"text": "Offsite planning.", "evidence": [4]}})
    assert consolidate()["passes"][0]["chunk"] == [1, 4]
    every(vault, 2)
    before = len(model.requests)
    again = consolidate()
    assert again["passes"] == [] and again["status"]["pending"] == 0
    assert len(model.requests) == before and watermark(vault)["last"] == 4


def test_add_message_starts_a_pass_only_when_a_chunk_is_complete_and_never_fails_for_it(
    cli, vault: Vault, model: ScriptedModel
) -> None:
    every(vault, 2)
    ok(cli("task", "new", "Chat", "--json"))
    started: list[str] = []

    def broken(task_id: str) -> None:
        raise OSError("no process can be started")

    with Session.locate(str(vault.root), "demo", environ=MODEL) as session:
        trigger = consolidator(session, model, start=started.append)
        first = session.tasks.add_message("t1", "user", "first")
        assert trigger.after_message("t1", first) is False and started == []  # one message: no chunk yet
        second = session.tasks.add_message("t1", "user", "second")
        assert trigger.after_message("t1", second) is True and started == ["t1"]
        assert consolidator(session, model, start=broken).after_message("t1", second) is False
    with Session.locate(str(vault.root), "demo", environ={}) as session:  # no consolidate model
        assert consolidator(session, model, start=started.append).after_message("t1", second) is False
    assert started == ["t1"] and model.requests == []


def test_a_chunk_completed_while_a_pass_runs_is_taken_when_it_ends(
    cli, vault: Vault, model: ScriptedModel, consolidate
) -> None:
    """The issue's case (every = 2): messages 3-4 arrive while the pass over 1-2 waits for the
    model; the trigger they make finds the pass busy. The pass, ending, takes 3-4 itself."""
    every(vault, 2)
    ok(cli("task", "new", "Chat", "--json"))
    for text in ("one", "two"):
        ok(cli("task", "add-message", "t1", text, "--role", "user", "--json"))
    asked, release = threading.Event(), threading.Event()

    def held() -> str:
        asked.set()
        assert release.wait(120)
        return json.dumps({"summary": {"text": "One and two.", "evidence": [1]}})

    model.replies.append(held)
    model.reply_json({"summary": {"text": "Three and four.", "evidence": [3]}})
    ended: list[dict] = []
    background = threading.Thread(target=lambda: ended.append(consolidate(background=True)))
    background.start()  # the pass over 1-2, which waits for the model
    try:
        assert asked.wait(120)
        for text in ("three", "four"):
            ok(cli("task", "add-message", "t1", text, "--role", "user", "--json"))
        assert ok(cli("task", "show", "t1", "--json"))["consolidation"]["running"] is True
        busy = consolidate(background=True)  # what the trigger of message 4 runs
        assert busy["reason"] == "a consolidation pass of this task is running" and busy["passes"] == []
    finally:
        release.set()
        background.join(120)
    assert [p["chunk"] for p in ended[0]["passes"]] == [[1, 2], [3, 4]]
    assert watermark(vault)["last"] == 4 and watermark(vault)["summary"] == "Three and four."
    assert [entry["chunk"] for entry in log(vault)] == [[1, 2], [3, 4]]


# --- --cancel signals the pass and nothing else --------------------------------------------------


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process of this user, as a reused pid would name."""
    child = subprocess.Popen(["sleep", "600"])
    yield child
    child.kill()
    child.wait()


def pid_file(vault: Vault, task: str = "t1") -> Path:
    return vault.root / ".aibuddy" / "run" / f"consolidate-demo-{task}.pid"


@pytest.mark.process
def test_cancel_never_signals_a_process_a_leftover_pid_file_names(
    cli, vault: Vault, bystander: subprocess.Popen[bytes]
) -> None:
    from aibuddy_cli.background import identity

    ok(cli("task", "new", "Chat", "--json"))
    pid_file(vault).parent.mkdir(parents=True, exist_ok=True)
    # No pass runs: a pid file left by a killed pass names a live process now. Not signalled,
    # and the leftover is removed.
    pid_file(vault).write_text(json.dumps(identity(bystander.pid)))
    answer = ok(cli("task", "consolidate", "t1", "--cancel", "--json"))
    assert answer == {"task": "t1", "cancelled": False, "reason": "no pass of this task is running"}
    assert bystander.poll() is None and not pid_file(vault).exists()
    # A pass runs (this process holds its lock) but the pid file names another process, with its
    # true start time, or in the old plain form: the one named holds no lock, so it is left alone.
    with PassControl(Session(vault, "demo").tasks).lock("t1"):
        for recorded, why in (
            (json.dumps(identity(bystander.pid)), f"process {bystander.pid} does not hold the pass's lock"),
            (str(bystander.pid), "the pid file names no process"),  # a pid file of an older version
        ):
            pid_file(vault).write_text(recorded)
            answer = ok(cli("task", "consolidate", "t1", "--cancel", "--json"))
            assert answer == {"task": "t1", "cancelled": False, "reason": f"not signalled: {why}"}
            assert bystander.poll() is None
        pid_file(vault).unlink()
        answer = ok(cli("task", "consolidate", "t1", "--cancel", "--json"))
        why = "the running pass left no usable pid file"
        assert answer == {"task": "t1", "cancelled": False, "reason": why}


@pytest.mark.process
def test_a_pid_names_a_process_only_with_its_start_time(bystander: subprocess.Popen[bytes]) -> None:
    from aibuddy_cli.background import identity, process_start, signal_process

    recorded = identity(bystander.pid)
    assert recorded["start"] == process_start(bystander.pid) and recorded["start"] is not None
    reused = {**recorded, "start": str(int(recorded["start"]) + 1)}  # the pid, another process
    assert "another process now" in (signal_process(reused, signal.SIGTERM) or "")
    assert signal_process({**recorded, "host": "elsewhere"}, signal.SIGTERM) is not None
    assert bystander.poll() is None
    assert signal_process(recorded, signal.SIGTERM) is None
    assert bystander.wait(timeout=60) == -signal.SIGTERM
    assert "gone" in (signal_process(recorded, signal.SIGTERM) or "")


# --- in real processes, through one worker and one server ----------------------------------------


@pytest.fixture
def server(warm_worker: tuple[FakeOpenAI, dict[str, str]]) -> FakeOpenAI:
    """The pytest process's fake server, reset for this test."""
    return warm_worker[0]


@pytest.fixture
def process_env(warm_worker: tuple[FakeOpenAI, dict[str, str]], vault: Vault) -> dict[str, str]:
    """The environment of this test's `aibuddy` processes: the process's warm model worker serves
    them all (litellm is imported by the worker, never by a pass); the vault, the user and the
    model are AIBUDDY_ settings, which the worker's key leaves out."""
    return in_vault(warm_worker[1], vault.root, **MODEL)


def cwd(env: dict[str, str]) -> Path:
    """Where the module's processes run, the worker's folder (the working directory can be part
    of the worker's key)."""
    return Path(env["HOME"]).parent


def aibuddy(aibuddy_exe: list[str], env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_aibuddy(aibuddy_exe, *args, env=env, cwd=cwd(env))


def start_pass(aibuddy_exe: list[str], env: dict[str, str], *options: str) -> subprocess.Popen[bytes]:
    command = [*aibuddy_exe, "task", "consolidate", "t1", *options]
    quiet = subprocess.DEVNULL
    return subprocess.Popen(command, env=env, cwd=cwd(env), stdout=quiet, stderr=quiet)


@pytest.mark.process
def test_add_message_starts_a_background_pass_that_never_reaches_it(
    cli, aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], server: FakeOpenAI
) -> None:
    """At the end of a chunk add-message starts a detached pass and answers; a pass that fails
    says nothing to it, and its chunk is taken again by the next trigger. Every model call goes
    through the worker. (When a message completes no chunk, no pass starts: in process, above.)"""
    every(vault, 1)
    ok(cli("task", "new", "Chat", "--json"))
    calls = worker.status(process_env).calls or 0
    server.enqueue(status=500)
    added = aibuddy(aibuddy_exe, process_env, "task", "add-message", "t1", "one", "--role", "user", "--json")
    assert added.returncode == 0 and added.stderr == b""
    assert wait_for(lambda: log(vault) and not running(vault))
    assert log(vault)[-1]["applied"] is False and watermark(vault) is None
    server.reply_json({"summary": {"text": "One message so far.", "evidence": [1]}})
    server.reply_json({"summary": {"text": "Two messages so far.", "evidence": [2]}})
    added = aibuddy(aibuddy_exe, process_env, "task", "add-message", "t1", "two", "--role", "user", "--json")
    assert added.returncode == 0 and added.stderr == b""
    assert wait_for(lambda: (watermark(vault) or {}).get("last") == 2 and not running(vault))
    assert watermark(vault)["summary"] == "Two messages so far."
    assert [(entry["chunk"], entry["applied"]) for entry in log(vault)] == [
        ([1, 1], False),
        ([1, 1], True),
        ([2, 2], True),
    ]
    assert worker.status(process_env).calls == calls + 3


@pytest.mark.process
def test_a_killed_pass_leaves_the_watermark_and_no_lock(
    cli, aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], server: FakeOpenAI
) -> None:
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "hello", "--role", "user", "--json"))
    hold = threading.Event()
    server.enqueue(content='{"summary": {"text": "late", "evidence": [1]}}', hold=hold)
    asked = len(server.requests)
    child = start_pass(aibuddy_exe, process_env)  # on demand: the pending message is a chunk
    try:
        assert wait_for(lambda: len(server.requests) > asked)  # the pass is waiting for the model
        assert ok(cli("task", "show", "t1", "--json"))["consolidation"]["running"] is True
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        hold.set()
    assert watermark(vault) is None
    shown = ok(cli("task", "show", "t1", "--json"))
    expected = {"through": 0, "pending": 1, "running": False, "summary": None, "ahead": {}}
    assert shown["consolidation"] == expected
    server.reply_json({"summary": {"text": "Said hello.", "evidence": [1]}})
    again = aibuddy(aibuddy_exe, process_env, "task", "consolidate", "t1", "--json")
    assert json.loads(again.stdout)["passes"][0]["applied"] is True and watermark(vault)["last"] == 1


@pytest.mark.process
def test_a_running_pass_in_the_background_or_the_foreground_can_be_cancelled(
    cli,
    aibuddy_exe: list[str],
    vault: Vault,
    process_env: dict[str, str],
    server: FakeOpenAI,
    model: ScriptedModel,
    consolidate,
) -> None:
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "hello", "--role", "user", "--json"))
    every(vault, 1)  # a background pass takes whole chunks only
    for options in (["--background"], []):
        hold = threading.Event()
        server.enqueue(content="{}", hold=hold)
        asked = len(server.requests)
        child = start_pass(aibuddy_exe, process_env, *options)
        try:
            assert wait_for(lambda: len(server.requests) > asked)  # noqa: B023 - waited for here
            cancelled = ok(cli("task", "consolidate", "t1", "--cancel", "--json"))
            assert cancelled == {"task": "t1", "cancelled": True, "reason": None}
            assert child.wait(timeout=120) == -signal.SIGTERM
        finally:
            hold.set()
        assert watermark(vault) is None
    model.reply_json({"summary": {"text": "Said hello.", "evidence": [1]}})
    assert consolidate()["passes"][0]["applied"] is True  # the chunk is tried again
    assert not pid_file(vault).exists()  # removed by the pass that ended (the cancelled one's overwritten)


def test_the_shield_knows_aibuddys_tools_by_the_names_claude_code_gives_them() -> None:
    """A transcript from Claude Code names the MCP server's tools `mcp__aibuddy__memory_save`: what
    they did is handled; another server's tool of the same short name is not aibuddy's."""
    from aibuddy_cli.tasks.consolidation.shield import Shield
    from aibuddy_cli.tasks.service import TaskMessage

    def call(name: str, record: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "arguments": json.dumps({"name": record})}}

    calls = [
        call("mcp__aibuddy__memory_save", "tabs"),
        call("mcp__aibuddy__memory_delete", "old"),
        call("mcp__notes__memory_save", "theirs"),
    ]
    shield = Shield([TaskMessage(1, "assistant", "", "2026-11-30T09:00:00Z", [], calls)])
    assert shield.handles("memory", {"name": "tabs"}) and shield.handles("memory", {"name": "old"})
    assert not shield.handles("memory", {"name": "theirs"})


@pytest.mark.parametrize(
    "tool", ["add_rows", "table_add_rows", "mcp__aibuddy__table_add_rows", "update_rows", "table_update_rows"]
)
def test_the_shield_knows_the_row_tools_by_every_name_aibuddy_gives_them(tool: str) -> None:
    """A row the chunk's own call wrote (the table loops' `add_rows`, the MCP server's
    `table_add_rows`, as Claude Code's transcript names it too) is not added a second time."""
    from aibuddy_cli.tasks.consolidation.shield import Shield
    from aibuddy_cli.tasks.service import TaskMessage

    row = {"name": "Maria Lopez", "bio": "Runs the venue"}
    if "add_rows" in tool:
        arguments: dict[str, Any] = {"table": "contacts", "rows": [row]}
    else:
        arguments = {"table": "contacts", "filter": 'name == "Maria"', "values": row}
    calls = [{"type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}]
    shield = Shield([TaskMessage(1, "assistant", "", "2026-11-30T09:00:00Z", [], calls)])
    assert shield.handles("contacts", {"name": "Maria  Lopez"})
    assert shield.handles("knowledge", {"table": "contacts", "rows": [row]})
    other = Shield([TaskMessage(1, "assistant", "", "2026-11-30T09:00:00Z", [], [
        {"type": "function", "function": {"name": f"mcp__notes__{tool}", "arguments": json.dumps(arguments)}}
    ])])
    assert not other.handles("contacts", {"name": "Maria Lopez"})  # another server's tool


def test_the_shields_row_tool_names_are_the_registrys() -> None:
    """Each name the shield knows is the `add_rows` or `update_rows` operation's, for the MCP
    server or the table loops, so a renamed tool cannot leave it behind."""
    from aibuddy_cli.operations.registry import operations
    from aibuddy_cli.tasks.consolidation.shield import ROW_TOOLS

    names = {
        name: op.tools["table_write"]
        for op in operations("table")
        if op.tools.get("table_write") in ("add_rows", "update_rows")
        for name in op.tools.values()
    }
    assert names == ROW_TOOLS


def test_one_value_no_file_can_hold_never_costs_the_log_its_line(vault: Vault) -> None:
    """A decision whose name or detail holds a lone surrogate (a failure's message quoting the
    model's value) is logged with U+FFFD in its place; the pass's line and its other decisions
    are all there (the line was lost whole)."""
    from aibuddy_cli.memory.extraction import Decision
    from aibuddy_cli.tasks.consolidation.log import log_pass

    decisions = [
        Decision("contacts", "failed", "no table 'x\udc00'", "Ana \ud83d"),
        Decision("memory", "created", "new record", "tea"),
    ]
    with Session.locate(str(vault.root), "demo", environ={}) as session:
        log_pass(session.tasks, "t1", [1, 2], decisions, applied=True, categories=["memory", "contacts"])
    (entry,) = log(vault)
    assert entry["decisions"] == [
        {"step": "contacts", "outcome": "failed", "detail": "no table 'x\ufffd'", "name": "Ana \ufffd"},
        {"step": "memory", "outcome": "created", "detail": "new record", "name": "tea"},
    ]


def test_the_calls_the_shield_reads_are_kept_whole_in_a_transcript() -> None:
    """Every tool the shield reads keeps its arguments whole in an imported transcript."""
    from aibuddy_cli.tasks.consolidation.shield import MEMORY_TOOLS, ROW_TOOLS
    from aibuddy_cli.transcripts import _KEPT_WHOLE

    assert {*MEMORY_TOOLS, "memory_delete", *ROW_TOOLS} <= _KEPT_WHOLE
