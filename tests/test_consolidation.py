"""Consolidation: a pass over each chunk of a task's messages, through the real litellm client and
the local fake server. Evidence checks, the shield, category flags, dry runs, the watermark across
failures and a killed pass, and the background trigger that add-message never waits for."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ok, run_aibuddy
from fake_openai import FakeOpenAI

from aibuddy_cli.tasks.service import TaskService
from aibuddy_cli.vault import Vault

MODEL = {"AIBUDDY_MODEL_CONSOLIDATE": "openai/consolidate-test", "AIBUDDY_TIMEOUT": "30"}


def every(vault: Vault, n: int) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("every = 50", f"every = {n}"))


def watermark(vault: Vault, task: str = "t1") -> dict | None:
    path = vault.root / "tasks" / "demo" / task / "consolidation.json"
    return json.loads(path.read_text()) if path.exists() else None


def log(vault: Vault) -> list[dict]:
    path = vault.root / ".aibuddy/logs/consolidation.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


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


@pytest.fixture
def model(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    for name, value in MODEL.items():
        monkeypatch.setenv(name, value)
    return fake_openai


REPLY = {
    "memory": [
        {
            "type": "user",
            "name": "diet",
            "description": "Vegetarian",
            "body": "The user is vegetarian.",
            "evidence": [1],
        },
        {"type": "user", "name": "shoe-size", "description": "Shoe size 44", "body": "44", "evidence": [9]},
        {"type": "project", "name": "ghost", "description": "No evidence", "body": "x"},
        {"type": "project", "name": "offsite-budget", "description": "Budget", "body": "5k", "evidence": [2]},
        {
            "type": "project",
            "name": "old-venue",
            "description": "Old venue",
            "body": "Hall A",
            "evidence": [2],
        },
    ],
    "contacts": [{"name": "Maria Lopez", "bio": "Handles the venue", "evidence": [3]}],
    "summary": {"text": "Planning an offsite; Maria handles the venue.", "evidence": [1, 3]},
}


def test_without_a_model_nothing_is_consolidated_and_it_says_why(cli, vault: Vault, chat: str) -> None:
    result = ok(cli("task", "consolidate", "t1", "--json"))
    assert result["passes"] == [] and "no model for the consolidate role" in result["reason"]
    assert watermark(vault) is None and result["status"]["pending"] == 4


def test_a_pass_checks_evidence_shields_and_keeps_its_watermark(cli, vault: Vault, chat: str, model) -> None:
    model.reply_json(REPLY)
    result = ok(cli("task", "consolidate", "t1", "--json"))
    (done,) = result["passes"]
    assert done["chunk"] == [1, 4] and done["applied"] is True
    outcomes = {(d["step"], d.get("name"), d["outcome"]) for d in done["decisions"]}
    assert ("memory", "diet", "created") in outcomes
    assert ("memory", "offsite-budget", "handled") in outcomes
    assert ("memory", "old-venue", "dropped") in outcomes
    assert ("contacts", None, "ignored") in outcomes  # contacts are off by default
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
    assert shown == {"through": 4, "pending": 0, "running": False, "summary": mark["summary"]}
    assert log(vault)[-1]["applied"] is True
    # Nothing pending: a second run makes no request.
    before = len(model.requests)
    assert ok(cli("task", "consolidate", "t1", "--json"))["passes"] == []
    assert len(model.requests) == before


def test_an_item_its_cited_messages_do_not_state_is_dropped(cli, vault: Vault, chat: str, model) -> None:
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
    decisions = ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["decisions"]
    outcomes = {(d["step"], d.get("name"), d["outcome"]) for d in decisions}
    assert {("memory", "password", "dropped"), ("memory", "diet", "created")} <= outcomes
    assert ("memory", "venue-budget", "dropped") in outcomes
    dropped = next(d for d in decisions if d.get("name") == "password")
    assert dropped["detail"].startswith("the cited message(s) 1 do not state it")
    assert not (vault.root / "memory/demo/password.md").exists()
    assert (vault.root / "memory/demo/diet.md").exists()
    assert "hunter2" not in (vault.root / ".aibuddy/logs/consolidation.jsonl").read_text()


def test_two_values_in_one_pass_are_two_records(cli, vault: Vault, model) -> None:
    every(vault, 2)
    ok(cli("task", "new", "Reports", "--json"))
    for text in ("Team A's weekly report is due on Friday.", "Team B's weekly report is now due on Monday."):
        ok(cli("task", "add-message", "t1", text, "--role", "user", "--json"))
    items = [
        {"type": "project", "name": "due", "description": description, "body": "", "evidence": [n]}
        for n, description in ((1, "Weekly report due on Friday"), (2, "Weekly report is now due on Monday"))
    ]
    model.reply_json({"memory": items})
    decisions = ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["decisions"]
    assert [(d["outcome"], d.get("name")) for d in decisions if d["step"] == "memory"] == [
        ("created", "due"),
        ("created", "due-2"),
    ]


def test_a_contact_must_be_named_by_its_messages_and_its_bio_stated(
    cli, vault: Vault, chat: str, model, monkeypatch
) -> None:
    monkeypatch.setenv("AIBUDDY_CONSOLIDATE_CONTACTS", "1")
    model.reply_json(
        {
            "contacts": [
                {"name": "John Smith", "bio": "Handles the venue", "evidence": [3]},
                {"name": "Maria Lopez", "bio": "Former chief financial officer", "evidence": [3]},
            ]
        }
    )
    decisions = ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["decisions"]
    outcomes = [(d.get("name"), d["outcome"], d["detail"]) for d in decisions if d["step"] == "contacts"]
    assert outcomes == [
        ("John Smith", "dropped", "the cited message(s) 3 do not state it: the name is not in them"),
        ("Maria Lopez", "dropped", "bio: the cited message(s) 3 do not state it"),
        ("Maria Lopez", "created", "new contact"),
    ]
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    assert rows == [{"row_id": 1, "name": "Maria Lopez", "bio": None, "response_policy": None}]


def test_knowledge_rows_are_kept_as_far_as_their_messages_state_them() -> None:
    from aibuddy_cli.tasks.consolidation import _stated_part

    texts = {1: "Hall A and Villa B in Lisbon are options.", 2: "Noted."}
    rows = [{"name": "Villa B", "city": "Lisbon"}, {"name": "Castle C", "city": "Porto"}]
    item, problem, notes = _stated_part(
        "knowledge", {"table": "venues", "rows": rows, "evidence": [1]}, texts
    )
    assert problem is None and item["rows"] == rows[:1]
    assert [(n.outcome, n.detail) for n in notes] == [
        ("dropped", "1 row(s): the cited message(s) 1 do not state it")
    ]
    _, problem, _ = _stated_part("knowledge", {"table": "venues", "rows": rows, "evidence": [2]}, texts)
    assert problem == "the cited message(s) 2 do not state it: none of its 2 row(s)"


def test_a_dry_run_writes_nothing(cli, vault: Vault, chat: str, model) -> None:
    model.reply_json(REPLY)
    result = ok(cli("task", "consolidate", "t1", "--dry-run", "--json"))
    outcomes = {(d["step"], d.get("name"), d["outcome"]) for d in result["passes"][0]["decisions"]}
    assert ("memory", "diet", "would-create") in outcomes
    assert watermark(vault) is None and not (vault.root / "memory/demo/diet.md").exists() and log(vault) == []


def test_a_failed_pass_leaves_the_watermark_and_is_retried(cli, vault: Vault, chat: str, model) -> None:
    model.enqueue(status=500)
    failed = ok(cli("task", "consolidate", "t1", "--json"))
    assert failed["passes"][0]["applied"] is False and watermark(vault) is None
    assert log(vault)[-1]["applied"] is False
    model.reply_json({"summary": {"text": "Offsite planning.", "evidence": [4]}})
    assert ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["applied"] is True
    assert watermark(vault)["last"] == 4


def test_contacts_are_a_table_merged_by_name(cli, vault: Vault, chat: str, model, monkeypatch) -> None:
    monkeypatch.setenv("AIBUDDY_CONSOLIDATE_CONTACTS", "1")
    monkeypatch.setenv("AIBUDDY_CONSOLIDATE_MEMORY", "0")
    model.reply_json(REPLY)
    decisions = ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["decisions"]
    assert {"step": "memory", "outcome": "ignored", "detail": "category switched off"} in decisions
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    assert rows == [{"row_id": 1, "name": "Maria Lopez", "bio": "Handles the venue", "response_policy": None}]
    journal = (vault.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()
    assert [json.loads(line)["source"] for line in journal] == ["consolidation", "consolidation"]
    for text in ("more 0", "Email only for Maria Lopez.", "more 2", "more 3"):
        ok(cli("task", "add-message", "t1", text, "--role", "user", "--json"))
    model.reply_json(
        {"contacts": [{"name": "Maria Lopez", "response_policy": "Email only", "evidence": [6]}]}
    )
    ok(cli("task", "consolidate", "t1", "--json"))
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    assert rows == [
        {"row_id": 1, "name": "Maria Lopez", "bio": "Handles the venue", "response_policy": "Email only"}
    ]


def test_knowledge_rows_and_the_task_plan(cli, vault: Vault, model, monkeypatch) -> None:
    every(vault, 2)
    monkeypatch.setenv("AIBUDDY_CONSOLIDATE_KNOWLEDGE", "1")
    monkeypatch.setenv("AIBUDDY_CONSOLIDATE_TASKS", "1")
    ok(cli("table", "create", "venues", "-c", "name:str", "-c", "city:str", "--json"))
    ok(cli("task", "new", "Offsite", "--json"))
    done = [
        {"function": {"name": "add_rows", "arguments": {"table": "venues", "rows": [{"name": "Hall A"}]}}}
    ]
    options = "Hall A and Villa B in Lisbon are options."
    ok(cli("task", "add-message", "t1", options, "--role", "user", "--json"))
    ok(
        cli(
            "task",
            "add-message",
            "t1",
            "Added Hall A.",
            "--role",
            "assistant",
            "--tool-calls",
            json.dumps(done),
            "--json",
        )
    )
    model.reply_json(
        {
            "knowledge": [
                {"table": "venues", "rows": [{"name": "Hall A"}], "evidence": [2]},
                {"table": "venues", "rows": [{"name": "Villa B", "city": "Lisbon"}], "evidence": [1]},
            ],
            "tasks": {"plan": "Compare Hall A and Villa B", "evidence": [1]},
        }
    )
    decisions = ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["decisions"]
    assert [d["outcome"] for d in decisions if d["step"] == "knowledge"] == ["handled", "added"]
    names = [r["name"] for r in ok(cli("table", "filter", "venues", "--json"))["tables"][0]["rows"]]
    assert names == ["Villa B"]  # Hall A was the chunk's own add_rows, which this test never ran
    assert ok(cli("task", "show", "t1", "--json"))["plan"] == "Compare Hall A and Villa B"


# --- in the background, in real processes -------------------------------------------------------


def wait_for(check, seconds: float = 120.0) -> bool:
    """Whether check() came true within seconds: a generous bound, for a cold litellm import on a
    busy machine (tens of seconds), never a timing."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def process_env(env: dict[str, str], fake_openai: FakeOpenAI) -> dict[str, str]:
    return {**env, **MODEL, "OPENAI_API_KEY": "sk-test", "OPENAI_API_BASE": fake_openai.url}


def add(aibuddy_exe: list[str], env: dict[str, str], text: str) -> subprocess.CompletedProcess[bytes]:
    return run_aibuddy(aibuddy_exe, "task", "add-message", "t1", text, "--role", "user", "--json", env=env)


def test_add_message_starts_a_background_pass_at_the_end_of_a_chunk(
    aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    every(vault, 2)
    assert run_aibuddy(aibuddy_exe, "task", "new", "Chat", env=process_env).returncode == 0
    fake_openai.reply_json({"summary": {"text": "Two messages so far.", "evidence": [1, 2]}})
    assert add(aibuddy_exe, process_env, "first").returncode == 0
    assert not wait_for(lambda: fake_openai.requests, 0.5)  # one message: no chunk yet
    assert add(aibuddy_exe, process_env, "second").returncode == 0
    assert wait_for(lambda: (watermark(vault) or {}).get("last") == 2)
    assert watermark(vault)["summary"] == "Two messages so far."


def test_a_failing_background_pass_never_reaches_add_message(
    aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    every(vault, 1)
    assert run_aibuddy(aibuddy_exe, "task", "new", "Chat", env=process_env).returncode == 0
    fake_openai.enqueue(status=500)
    added = add(aibuddy_exe, process_env, "hello")
    assert added.returncode == 0 and added.stderr == b""
    assert wait_for(lambda: log(vault))
    assert log(vault)[-1]["applied"] is False and watermark(vault) is None


def test_a_killed_pass_leaves_the_watermark_and_no_lock(
    aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    every(vault, 50)
    assert run_aibuddy(aibuddy_exe, "task", "new", "Chat", env=process_env).returncode == 0
    assert add(aibuddy_exe, process_env, "hello").returncode == 0
    hold = threading.Event()
    fake_openai.enqueue(content='{"summary": {"text": "late", "evidence": [1]}}', hold=hold)
    command = [*aibuddy_exe, "task", "consolidate", "t1"]  # on demand: the pending message is a chunk
    child = subprocess.Popen(command, env=process_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: fake_openai.requests)  # the pass is waiting for the model
        shown = json.loads(run_aibuddy(aibuddy_exe, "task", "show", "t1", "--json", env=process_env).stdout)
        assert shown["consolidation"]["running"] is True
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        hold.set()
    assert watermark(vault) is None
    shown = json.loads(run_aibuddy(aibuddy_exe, "task", "show", "t1", "--json", env=process_env).stdout)
    assert shown["consolidation"] == {"through": 0, "pending": 1, "running": False, "summary": None}
    fake_openai.reply_json({"summary": {"text": "Said hello.", "evidence": [1]}})
    again = run_aibuddy(aibuddy_exe, "task", "consolidate", "t1", "--json", env=process_env)
    assert json.loads(again.stdout)["passes"][0]["applied"] is True and watermark(vault)["last"] == 1


def test_a_running_pass_can_be_cancelled(
    aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    assert run_aibuddy(aibuddy_exe, "task", "new", "Chat", env=process_env).returncode == 0
    assert add(aibuddy_exe, process_env, "hello").returncode == 0
    every(vault, 1)  # now, not before the message: this test starts the pass itself
    hold = threading.Event()
    fake_openai.enqueue(content="{}", hold=hold)
    child = subprocess.Popen(
        [*aibuddy_exe, "task", "consolidate", "t1", "--background"],
        env=process_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: fake_openai.requests)
        cancelled = run_aibuddy(
            aibuddy_exe, "task", "consolidate", "t1", "--cancel", "--json", env=process_env
        )
        assert json.loads(cancelled.stdout) == {"task": "t1", "cancelled": True, "reason": None}
        assert child.wait(timeout=120) != 0
    finally:
        hold.set()
    assert watermark(vault) is None


def test_each_chunk_of_one_run_rolls_the_summary_the_chunk_before_wrote(
    cli, vault: Vault, chat: str, model
) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("every = 4", "every = 2"))
    model.reply_json({"summary": {"text": "First half.", "evidence": [1]}})
    model.reply_json({"summary": {"text": "Both halves.", "evidence": [3]}})
    passes = ok(cli("task", "consolidate", "t1", "--json"))["passes"]
    assert [p["chunk"] for p in passes] == [[1, 2], [3, 4]]
    second = model.requests[-1]["body"]["messages"][1]["content"]
    assert second.startswith("Previous summary: First half.")
    assert watermark(vault)["summary"] == "Both halves."


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
    with TaskService(vault, "demo").store.lock("consolidate-demo-t1", timeout=0):
        for recorded, why in (
            (json.dumps(identity(bystander.pid)), f"process {bystander.pid} does not hold the pass's lock"),
            (str(bystander.pid), "the pid file names no process"),  # a pid file of an older version
        ):
            pid_file(vault).write_text(recorded)
            answer = ok(cli("task", "consolidate", "t1", "--cancel", "--json"))
            assert answer == {"task": "t1", "cancelled": False, "reason": f"not signalled: {why}"}
            assert bystander.poll() is None


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


def test_a_foreground_pass_can_be_cancelled_and_a_finished_one_leaves_no_pid_file(
    aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    assert run_aibuddy(aibuddy_exe, "task", "new", "Chat", env=process_env).returncode == 0
    assert add(aibuddy_exe, process_env, "hello").returncode == 0
    hold = threading.Event()
    fake_openai.enqueue(content="{}", hold=hold)
    child = subprocess.Popen(
        [*aibuddy_exe, "task", "consolidate", "t1"],  # on demand, in the foreground
        env=process_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: fake_openai.requests)
        cancel = ["task", "consolidate", "t1", "--cancel", "--json"]
        cancelled = run_aibuddy(aibuddy_exe, *cancel, env=process_env)
        assert json.loads(cancelled.stdout) == {"task": "t1", "cancelled": True, "reason": None}
        assert child.wait(timeout=120) == -signal.SIGTERM
    finally:
        hold.set()
    assert watermark(vault) is None
    fake_openai.reply_json({"summary": {"text": "Said hello.", "evidence": [1]}})
    again = run_aibuddy(aibuddy_exe, "task", "consolidate", "t1", "--json", env=process_env)
    assert json.loads(again.stdout)["passes"][0]["applied"] is True
    assert not pid_file(vault).exists()  # removed by the pass that ended (and the killed one's overwritten)


# --- a pass takes what arrived while it ran; one bad item costs only itself ---------------------


def test_a_chunk_completed_while_a_pass_runs_is_taken_when_it_ends(
    aibuddy_exe: list[str], vault: Vault, process_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    """The issue's case (every = 2): messages 3-4 arrive while the pass over 1-2 waits for the
    model; the trigger they make finds the pass busy. The pass, ending, takes 3-4 itself."""
    every(vault, 2)
    assert run_aibuddy(aibuddy_exe, "task", "new", "Chat", env=process_env).returncode == 0
    hold = threading.Event()
    fake_openai.enqueue(content=json.dumps({"summary": {"text": "One and two.", "evidence": [1]}}), hold=hold)
    fake_openai.reply_json({"summary": {"text": "Three and four.", "evidence": [3]}})
    try:
        assert add(aibuddy_exe, process_env, "one").returncode == 0
        assert add(aibuddy_exe, process_env, "two").returncode == 0  # starts the pass over 1-2
        assert wait_for(lambda: fake_openai.requests)  # which waits for the model now
        assert add(aibuddy_exe, process_env, "three").returncode == 0
        assert add(aibuddy_exe, process_env, "four").returncode == 0
        # What the trigger of message 4 runs, run here to know it has given up before the release.
        trigger = ["task", "consolidate", "t1", "--background", "--json"]
        busy = run_aibuddy(aibuddy_exe, *trigger, env=process_env)
        assert json.loads(busy.stdout)["reason"] == "a consolidation pass of this task is running"
    finally:
        hold.set()
    assert wait_for(lambda: (watermark(vault) or {}).get("last") == 4)
    assert watermark(vault)["summary"] == "Three and four."
    assert [entry["chunk"] for entry in log(vault)] == [[1, 2], [3, 4]]


def test_an_item_that_cannot_be_written_is_dropped_and_logged_and_the_rest_applied(
    cli, vault: Vault, chat: str, model, monkeypatch
) -> None:
    """A contact named by a lone surrogate cannot be stored: that item is dropped and logged;
    the chunk's other items and its watermark are written, so the chunk is not retried forever."""
    monkeypatch.setenv("AIBUDDY_CONSOLIDATE_CONTACTS", "1")
    reply = json.loads(json.dumps(REPLY))
    reply["contacts"].insert(0, {"name": "Maria \ud800 Lopez", "bio": "Handles the venue", "evidence": [3]})
    reply["memory"].append(
        {"type": "user", "name": "diet-\ud800", "description": "Veg \ud800", "body": "x", "evidence": [1]}
    )
    model.reply_json(reply)
    done = ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]
    assert done["applied"] is True
    outcomes = [(d["step"], d.get("name"), d["outcome"]) for d in done["decisions"]]
    assert ("memory", "diet", "created") in outcomes and ("contacts", "Maria Lopez", "created") in outcomes
    dropped = [d for d in done["decisions"] if d["outcome"] == "dropped" and "not valid text" in d["detail"]]
    assert [d["step"] for d in dropped] == ["memory", "contacts"]
    assert watermark(vault)["last"] == 4
    entry = log(vault)[-1]
    assert entry["applied"] is True and sum("not valid text" in d["detail"] for d in entry["decisions"]) == 2
    assert ok(cli("task", "consolidate", "t1", "--json"))["passes"] == []  # nothing left to retry


def test_a_lower_every_after_a_pass_redoes_nothing(cli, vault: Vault, chat: str, model) -> None:
    """The watermark keeps its chunk's first message: its check of the log does not depend on
    `every`, so changing it never sends the whole task to the model again."""
    model.reply_json({"summary": {"text": "Offsite planning.", "evidence": [4]}})
    assert ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["chunk"] == [1, 4]
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("every = 4", "every = 2"))
    before = len(model.requests)
    again = ok(cli("task", "consolidate", "t1", "--json"))
    assert again["passes"] == [] and again["status"]["pending"] == 0
    assert len(model.requests) == before and watermark(vault)["last"] == 4
