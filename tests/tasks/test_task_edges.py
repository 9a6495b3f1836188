"""Task message logs edited behind aibuddy's back (a hand edit, a git text merge), at their edges:
a line whose number or tool_calls is of the wrong kind is skipped with a warning (context,
consolidation and task end crashed), a task from before the message count never gives a number
twice, and a chunk holding a number twice never makes consolidation loop (each case a bug a review
found)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ok, run_aibuddy

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import ModelError
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.settings import Settings
from aibuddy_cli.tasks.consolidation import Consolidator
from aibuddy_cli.vault import Vault


def _log(vault: Vault, task: str = "t1") -> Path:
    return vault.root / "tasks" / "demo" / task / "messages.jsonl"


def _line(n: Any, role: str = "user", content: str = "hi", **extra: Any) -> str:
    data = {"n": n, "role": role, "content": content, "at": "2024-01-01T00:00:00Z", "attached": [], **extra}
    return json.dumps(data) + "\n"


def _compacting_task(vault: Vault) -> None:
    """t1 with six long messages and a threshold that compacts all but the last one."""
    config = vault.root / "aibuddy.toml"
    config.write_text(
        config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 100\nrecent_messages = 1")
    )
    tasks = Session(Vault.open(vault.root), "demo").tasks
    tasks.new("Chat")
    for i in range(6):
        tasks.add_message("t1", "user", f"message {i} " + "words " * 40)


def _insert(vault: Vault, at: int, line: str) -> None:
    log = _log(vault)
    lines = log.read_text().splitlines(keepends=True)
    lines.insert(at, line)
    log.write_text("".join(lines))


# --- a line whose tool_calls is not a list ------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize("bad_calls", [5, True])
def test_context_skips_a_log_line_whose_tool_calls_is_not_a_list(
    vault: Vault, env: dict[str, str], bad_calls: Any
) -> None:
    _compacting_task(vault)
    _insert(vault, 1, _line(1, role="assistant", content="calling", tool_calls=bad_calls))
    result = run_aibuddy([sys.executable, "-m", "aibuddy_cli"], "task", "context", "t1", "--json", env=env)
    # One damaged line of the log is skipped (it was exit 1 and a traceback, in tool_names).
    assert result.returncode == 0, result.stderr[-400:]
    assert b"Traceback" not in result.stderr


def test_task_end_extraction_skips_a_log_line_whose_tool_calls_is_not_a_list(cli, vault: Vault) -> None:
    ok(cli("task", "new", "Chat", "--json"))
    ok(cli("task", "add-message", "t1", "I prefer tea, remember that.", "--role", "user", "--json"))
    _insert(vault, 0, _line(1, role="assistant", content="calling", tool_calls=5))
    end = cli("task", "end", "t1", "--json")
    assert end.exit_code == 0
    decisions = json.loads(end.stdout)["extraction"]["decisions"]
    # One damaged line does not make extraction fail for the whole task (a TypeError did).
    assert all(d["outcome"] != "failed" for d in decisions), decisions


# --- a line whose number is not a whole number --------------------------------------------------


@pytest.mark.parametrize("bad_n", [None, "2"])
def test_context_skips_a_log_line_whose_number_is_not_a_whole_number(cli, vault: Vault, bad_n: Any) -> None:
    _compacting_task(vault)
    # where the digest runs out of budget: `message.n - older[0].n + 1`
    _insert(vault, 4, _line(bad_n, content="edited " * 40))
    result = cli("task", "context", "t1", "--json")  # (catch_exceptions=False: a crash would raise)
    assert result.exit_code == 0


@pytest.mark.parametrize("bad_n", [None, "2"])
def test_consolidation_skips_a_log_line_whose_number_is_not_a_whole_number(vault: Vault, bad_n: Any) -> None:
    tasks = Session(vault, "demo").tasks
    task = tasks.new("Chat")
    for i in range(3):
        tasks.add_message(task.id, "user", f"m{i}")
    with _log(vault).open("a") as handle:
        handle.write(_line(bad_n, content="edited"))
    environ = {"AIBUDDY_MODEL": "openai/none", "AIBUDDY_TIMEOUT": "1"}
    session = Session(Vault.open(vault.root), "demo", environ=environ)
    # (a number of another kind compared with whole numbers raised TypeError in _passes)
    session.consolidation.run(task.id, dry_run=True)


# --- numbering --------------------------------------------------------------------------------


def test_a_task_from_before_the_count_never_renumbers_onto_an_existing_message(vault: Vault) -> None:
    tasks = Session(vault, "demo").tasks
    task = tasks.new("Old")
    for i in range(3):
        tasks.add_message(task.id, "user", f"m{i}")
    path = vault.root / "tasks/demo/t1/task.json"
    stored = json.loads(path.read_text())
    del stored["messages"], stored["in_use"]  # a task file from before messages were counted
    path.write_text(json.dumps(stored))
    log = _log(vault)
    lines = log.read_text().splitlines(keepends=True)
    del lines[1]  # message 2 removed by hand: the log holds 1 and 3
    log.write_text("".join(lines))
    Session(vault, "demo").tasks.add_message(task.id, "user", "new")
    numbers = [m.n for m in Session(vault, "demo").tasks.messages(task.id)]
    assert numbers == [1, 3, 4]  # (counted by lines, the new message took number 3 again)


# --- consolidation over a chunk with a duplicated number ----------------------------------------


def test_consolidation_never_loops_on_a_chunk_holding_a_duplicated_message_number(vault: Vault) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(re.sub(r"(?m)^every = \d+$", "every = 4", config.read_text()))
    tasks = Session(Vault.open(vault.root), "demo").tasks
    task = tasks.new("Offsite")
    for i in range(3):
        tasks.add_message(task.id, "user", f"message {i}")
    log = _log(vault)
    lines = log.read_text().splitlines(keepends=True)
    # a git text merge (no aibuddy driver) kept both sides' message 3
    log.write_text("".join([*lines, json.dumps({**json.loads(lines[2]), "content": "other side"}) + "\n"]))
    requests: list[Any] = []

    def complete(settings: Any, messages: list[dict[str, str]]) -> str:
        requests.append(messages)
        if len(requests) > 3:  # without this guard the run never ends
            raise ModelError("stop: the same chunk was asked again and again")
        return json.dumps({"summary": {"text": "Planning an offsite.", "evidence": [1]}})

    environ = {"AIBUDDY_MODEL_CONSOLIDATE": "openai/x", "AIBUDDY_TIMEOUT": "5"}
    session = Session(Vault.open(vault.root), "demo", environ=environ)
    settings = Settings.read(environ)
    result = Consolidator(session.tasks, session.memory, lambda: session.tables, settings, complete=complete)
    done = to_json(result.run(task.id))
    # One model call: the watermark of a 4-line chunk numbered 1-3 is recognised (it was capped at
    # 3 lines: never, so the chunk was asked again and again), and status says through 3.
    assert len(requests) == 1
    assert done["status"]["through"] == 3


# --- README: "task add-message costs the same at message 1,000 as at 10" ---------------------------


